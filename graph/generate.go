// Package graph is the GraphQL management API: the gqlgen executable schema
// generated from ../schema.graphqls, its resolvers over package store,
// per-request dataloaders and the HTTP handler mounted at /graphql.
package graph

//go:generate go -C .. run github.com/99designs/gqlgen generate --config gqlgen.yml
