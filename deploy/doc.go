// Package deploy holds the tests of the deployment artifacts: the
// Dockerfile at the repository root and the Kubernetes manifests under
// deploy/kubernetes. It has no code of its own.
package deploy
