//! Workspace
