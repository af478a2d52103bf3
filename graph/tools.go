//go:build tools

package graph

// Keeps gqlgen (run by go:generate) in go.mod.
import _ "github.com/99designs/gqlgen"
