package model

// VirtualRepository is a virtual repository's settings as shown to a
// caller; Of is the virtual repository itself, which resolve needs.
type VirtualRepository struct {
	// In resolution order (at most 50).
	Upstreams []*VirtualUpstream `json:"upstreams"`
	// The HOSTED upstream that receives pushes and publishes sent to the virtual; null refuses them.
	DeployTo *Repository `json:"deployTo,omitempty"`
	// Name patterns never asked of REMOTE upstreams, even when no hosted upstream has the name (at most 50).
	ReservedPatterns []string    `json:"reservedPatterns"`
	Of               *Repository `json:"-"`
}
