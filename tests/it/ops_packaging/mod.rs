//! Packaging: the systemd unit ([`systemd`]), the Kubernetes base of
//! packaging/kubernetes/base ([`kubernetes`], its typed [`model`]), the
//! ConfigMaps copied from the repository's files ([`configmaps`]), and the
//! standard rules copied out of the repository ([`rules_copy`]).

mod configmaps;
mod kubernetes;
mod model;
mod rules_copy;
mod systemd;
