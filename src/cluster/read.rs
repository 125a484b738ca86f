//! What became of reading the cluster for a command: skipped (with why), failed, or read with
//! the facts gathered once.

use super::{Cluster, ClusterError, facts};

/// What became of reading the cluster.
pub enum ClusterRead {
    Skipped(&'static str),
    Failed(ClusterError),
    Read(Box<Cluster>, Box<facts::ClusterFacts>),
}

impl ClusterRead {
    /// The cluster, when it was read.
    pub fn cluster(&self) -> Option<&Cluster> {
        match self {
            Self::Read(c, _) => Some(c),
            _ => None,
        }
    }

    /// The cluster's facts, when it was read.
    pub fn facts(&self) -> Option<&facts::ClusterFacts> {
        match self {
            Self::Read(_, f) => Some(f),
            _ => None,
        }
    }
}
