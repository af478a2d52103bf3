package graph

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/handler/lru"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/parser"
	"github.com/vektah/gqlparser/v2/validator"
)

// BenchmarkDocumentLimit: the CPU a hostile document costs now that the
// document limits refuse it before validation, and what the worst document
// they still let through costs to parse and validate.
func BenchmarkDocumentLimit(b *testing.B) {
	limit := documentLimit{maxTokens: DefaultMaxTokens, maxFields: DefaultMaxFields, cache: lru.New[*ast.QueryDocument](10)}
	var aliases strings.Builder
	aliases.WriteString("{")
	for i := range 50_000 {
		fmt.Fprintf(&aliases, " a%d: __typename", i)
	}
	aliases.WriteString(" }")
	refused := map[string]string{
		"refuse-20000-repeated-fields": "{ viewer {" + strings.Repeat(" name", 20_000) + " } }",
		"refuse-50000-aliases":         aliases.String(),
		"refuse-2000-repeated-objects": "{" + strings.Repeat(" viewer { name }", 2_000) + " }",
	}
	for name, q := range refused {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				if err := limit.MutateOperationParameters(context.Background(), &graphql.RawParams{Query: q}); err == nil {
					b.Fatal("not refused")
				}
			}
		})
	}

	// The worst accepted shape for the pairwise field comparison: 50
	// response names asked 20 times each, each with a sub-selection.
	var worst strings.Builder
	worst.WriteString("{")
	for i := range 50 {
		for range maxSameResponseName {
			fmt.Fprintf(&worst, " a%d: viewer { kind }", i)
		}
	}
	worst.WriteString(" }")
	es := NewExecutableSchema(Config{Resolvers: &Resolver{}})
	b.Run("accept-worst-then-validate", func(b *testing.B) {
		for b.Loop() {
			if err := limit.MutateOperationParameters(context.Background(), &graphql.RawParams{Query: worst.String()}); err != nil {
				b.Fatal(err)
			}
			doc, err := parser.ParseQueryWithTokenLimit(&ast.Source{Input: worst.String()}, DefaultMaxTokens)
			if err != nil {
				b.Fatal(err)
			}
			if errs := validator.ValidateWithRules(es.Schema(), doc, nil); len(errs) > 0 {
				b.Fatal(errs)
			}
		}
	})
}
