//! Typed async client for the Production Operations API v2 (issue 3 builds it out).
