//! robota-server
