//! The C ABI's Rust tests: the boundary itself, and the exported functions called the way C
//! calls them. (Unit tests: the crate builds only C libraries, no rlib an integration test
//! could link.)

mod boundary;
mod effects;
mod payload;
mod protocol;
