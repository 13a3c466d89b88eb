//! `robota-remote`: the wire types of the `robota serve` protocol ([`wire`]), shared by the
//! server and its clients.

pub mod wire;
