//! End-to-end tests of policies pulled from an OCI registry (CNCF distribution on loopback):
//! digests, credentials and cosign signatures.

mod auth;
mod oci;
mod signatures;
