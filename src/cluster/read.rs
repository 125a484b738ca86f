//! What became of reading the cluster for a command: skipped (with why), failed, or read with
//! the facts gathered once.

use super::{Cluster, ClusterError, facts};

/// What became of reading the cluster.
pub enum ClusterRead {
    Skipped(&'static str),
    Failed(ClusterError),
    Read(Box<Cluster>, Box<facts::ClusterFacts>),
}
