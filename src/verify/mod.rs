//! `verify`: proves a Windows node passes traffic with agnhost `netexec` probe pods reached only
//! through the API server's pod proxy. The pure core: the matrix planned from the nodes
//! (matrix.rs), the probe image (image.rs), the objects made (objects.rs), netexec's `/dial`
//! asked and answered (dial.rs), and each check judged into a verdict naming its layer and the
//! next step (judge.rs); the node's own findings joined to the failures they explain
//! (node_health.rs).

pub mod dial;
pub mod failure;
pub mod image;
pub mod judge;
pub mod keeper;
pub mod lease;
pub mod matrix;
pub mod node_health;
pub mod objects;
pub mod options;
pub mod probe;
pub mod ready;
pub mod run;
pub mod settle;
pub mod shared;
pub mod step;
pub mod sweep;
pub mod wedged;
