//! The execution loop.
