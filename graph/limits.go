package graph

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
	"github.com/vektah/gqlparser/v2/parser"
)

// Error codes of the request and document limits.
const (
	CodeRequestTooLarge = "REQUEST_TOO_LARGE"
	CodeTokenLimit      = "TOKEN_LIMIT_EXCEEDED"
	CodeFieldLimit      = "FIELD_LIMIT_EXCEEDED"
	CodeTimeout         = "TIMEOUT"
)

// Limits on what one request may make the server read, parse and validate.
// gqlparser's validation is quadratic in the fields that share a response
// name in one selection set (OverlappingFieldsCanBeMerged compares every
// pair), so these bounds are checked on a cheap, token-limited parse before
// validation ever starts.
const (
	// DefaultMaxRequestBytes bounds a POST body and a GET query string.
	DefaultMaxRequestBytes = 1 << 20
	// DefaultMaxTokens bounds the lexer: an introspection query is under
	// 300 tokens, the UI's largest query 160.
	DefaultMaxTokens = 15_000
	// DefaultMaxFields bounds the selections (fields and fragment spreads)
	// of a document once every spread is expanded where it is used: an
	// introspection query has under 300, the UI's largest query 65.
	DefaultMaxFields = 2_000
	// maxSameResponseName bounds the fields answering under one response
	// name in one selection set, fragments expanded: what validation
	// compares pairwise. Real queries repeat a name a few times at most
	// (a field asked for directly and again through a fragment).
	maxSameResponseName = 20
	// DefaultOperationTimeout bounds one operation's execution; its expiry
	// answers TIMEOUT.
	DefaultOperationTimeout = 30 * time.Second
)

// readBody bounds the request before gqlgen reads it: a POST body over max
// bytes or a GET query string over max bytes is refused with a
// GraphQL-shaped REQUEST_TOO_LARGE, having read at most max+1 bytes. The
// body read is handed on in memory (gqlgen reads it whole anyway).
func readBody(w http.ResponseWriter, r *http.Request, max int64) bool {
	if len(r.URL.RawQuery) > int(max) {
		writeError(w, http.StatusRequestURITooLong, CodeRequestTooLarge,
			fmt.Sprintf("the query string exceeds the limit of %d bytes; send the operation in a POST body", max))
		return false
	}
	if r.Body == nil || r.Body == http.NoBody {
		return true
	}
	tooLarge := func() bool {
		writeError(w, http.StatusRequestEntityTooLarge, CodeRequestTooLarge,
			fmt.Sprintf("the request body exceeds the limit of %d bytes", max))
		return false
	}
	if r.ContentLength > max {
		return tooLarge()
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, max))
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		return tooLarge()
	case err != nil:
		writeError(w, http.StatusBadRequest, CodeInvalidInput, "the request body could not be read")
		return false
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	return true
}

// documentLimit refuses, before gqlgen parses and validates a document, one
// with more than maxTokens tokens, more than maxFields fields with its
// fragments expanded, or a selection set asking for one response name more
// than maxSameResponseName times. Documents already in the query cache
// passed it (only validated documents are cached) and are not checked again.
type documentLimit struct {
	maxTokens int
	maxFields int
	cache     graphql.Cache[*ast.QueryDocument]
}

var _ interface {
	graphql.HandlerExtension
	graphql.OperationParameterMutator
} = documentLimit{}

func (documentLimit) ExtensionName() string                   { return "DocumentLimit" }
func (documentLimit) Validate(graphql.ExecutableSchema) error { return nil }

func (d documentLimit) MutateOperationParameters(ctx context.Context, p *graphql.RawParams) *gqlerror.Error {
	if _, ok := d.cache.Get(ctx, p.Query); ok {
		return nil
	}
	doc, err := parser.ParseQueryWithTokenLimit(&ast.Source{Input: p.Query}, d.maxTokens)
	if err != nil {
		var ge *gqlerror.Error
		if errors.As(err, &ge) && strings.HasPrefix(ge.Message, "exceeded token limit") {
			return limitError(CodeTokenLimit, "the document exceeds the limit of %d tokens", d.maxTokens)
		}
		// Other syntax errors are gqlgen's to report, as it always has.
		return nil
	}
	return checkFields(doc, d.maxFields)
}

func limitError(code, format string, args ...any) *gqlerror.Error {
	err := gqlerror.Errorf(format, args...)
	err.Extensions = map[string]any{"code": code}
	return err
}

// fieldCounter walks a document as validation will see it: every
// fragment spread expanded where it is used and the sub-selections of the
// fields sharing a response name merged. Every selection it visits is paid
// for from one budget, so the walk itself costs at most maxFields steps
// however the fragments fan out.
type fieldCounter struct {
	frags    ast.FragmentDefinitionList
	left     int
	visiting map[string]bool
}

var errTooManyFields = errors.New("too many fields")

type repeatedNameError struct {
	name string
	n    int
}

func (e *repeatedNameError) Error() string { return fmt.Sprintf("%q asked %d times", e.name, e.n) }

func checkFields(doc *ast.QueryDocument, maxFields int) *gqlerror.Error {
	c := &fieldCounter{frags: doc.Fragments, left: maxFields, visiting: map[string]bool{}}
	for _, op := range doc.Operations {
		err := c.set([]ast.SelectionSet{op.SelectionSet})
		var rep *repeatedNameError
		switch {
		case errors.As(err, &rep):
			return limitError(CodeFieldLimit, "a selection set asks for %q %d times, more than the limit of %d",
				rep.name, rep.n, maxSameResponseName)
		case err != nil:
			return limitError(CodeFieldLimit, "the document has more than %d fields and fragment spreads once its fragments are expanded", maxFields)
		}
	}
	return nil
}

// set checks the selection sets that validation merges into one: the
// response names they answer, then, per response name, the merged
// sub-selections of its fields.
func (c *fieldCounter) set(sets []ast.SelectionSet) error {
	m := &merged{count: map[string]int{}, subs: map[string][]ast.SelectionSet{}}
	for _, s := range sets {
		if err := c.flatten(s, m); err != nil {
			return err
		}
	}
	for _, name := range m.order {
		if err := c.set(m.subs[name]); err != nil {
			return err
		}
	}
	return nil
}

type merged struct {
	count map[string]int
	subs  map[string][]ast.SelectionSet
	order []string
}

func (c *fieldCounter) flatten(s ast.SelectionSet, m *merged) error {
	for _, sel := range s {
		if c.left--; c.left < 0 {
			return errTooManyFields
		}
		switch sel := sel.(type) {
		case *ast.Field:
			if err := m.add(sel); err != nil {
				return err
			}
		case *ast.InlineFragment:
			if err := c.flatten(sel.SelectionSet, m); err != nil {
				return err
			}
		case *ast.FragmentSpread:
			// Unknown fragments and cycles are refused by validation; here
			// they only stop the walk.
			f := c.frags.ForName(sel.Name)
			if f == nil || c.visiting[sel.Name] {
				continue
			}
			c.visiting[sel.Name] = true
			err := c.flatten(f.SelectionSet, m)
			delete(c.visiting, sel.Name)
			if err != nil {
				return err
			}
		}
	}
	return nil
}

func (m *merged) add(f *ast.Field) error {
	name := f.Alias
	if name == "" {
		name = f.Name
	}
	m.count[name]++
	if n := m.count[name]; n > maxSameResponseName {
		return &repeatedNameError{name: name, n: n}
	}
	if len(f.SelectionSet) == 0 {
		return nil
	}
	if _, ok := m.subs[name]; !ok {
		m.order = append(m.order, name)
	}
	m.subs[name] = append(m.subs[name], f.SelectionSet)
	return nil
}

// operationDeadline gives every root field the operation's deadline, its
// start plus timeout. The request context already ends when the client
// goes away; the deadline bounds a client that waits forever. It is set on
// the root fields rather than on the request so that gqlgen, which drops
// the response of a request whose context is done, still answers the
// resolvers' TIMEOUT errors. A root field resolves its whole subtree
// before it returns, so the cancel runs after every nested resolver.
func operationDeadline(timeout time.Duration) graphql.RootFieldMiddleware {
	return func(ctx context.Context, next graphql.RootResolver) graphql.Marshaler {
		start := time.Now()
		if oc := graphql.GetOperationContext(ctx); !oc.Stats.OperationStart.IsZero() {
			start = oc.Stats.OperationStart
		}
		ctx, cancel := context.WithDeadline(ctx, start.Add(timeout))
		defer cancel()
		return next(ctx)
	}
}
