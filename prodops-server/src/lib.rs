//! prodops server
