//! `verify`: proves a Windows node passes traffic with agnhost `netexec` probe pods reached only
//! through the API server's pod proxy, each check judged into a verdict naming its layer.

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
