package redact

import (
	"context"
	"log/slog"
	"strings"
)

// Handler wraps a slog.Handler so that nothing it writes carries a
// secret: the message and every string, error and Stringer attribute go
// through Text, attributes named like a path or URL through Path.
func Handler(next slog.Handler) slog.Handler { return &handler{next: next} }

type handler struct{ next slog.Handler }

func (h *handler) Enabled(ctx context.Context, l slog.Level) bool { return h.next.Enabled(ctx, l) }

func (h *handler) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, Text(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(attr(a))
		return true
	})
	return h.next.Handle(ctx, out)
}

func (h *handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	clean := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		clean[i] = attr(a)
	}
	return &handler{next: h.next.WithAttrs(clean)}
}

func (h *handler) WithGroup(name string) slog.Handler { return &handler{next: h.next.WithGroup(name)} }

// attr redacts one attribute, groups recursively.
func attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, value(a.Key, v.String()))
	case slog.KindGroup:
		g := v.Group()
		clean := make([]any, len(g))
		for i, m := range g {
			clean[i] = attr(m)
		}
		return slog.Group(a.Key, clean...)
	case slog.KindAny:
		switch x := v.Any().(type) {
		case error:
			return slog.String(a.Key, Text(x.Error()))
		case interface{ String() string }:
			return slog.String(a.Key, value(a.Key, x.String()))
		case []string:
			clean := make([]string, len(x))
			for i, s := range x {
				clean[i] = Text(s)
			}
			return slog.Any(a.Key, clean)
		}
	}
	return slog.Attr{Key: a.Key, Value: v}
}

// value redacts a string attribute by its key.
func value(key, s string) string {
	switch k := strings.ToLower(key); {
	case k == "path" || strings.HasSuffix(k, "_path"):
		return Path(s)
	case k == "url" || k == "uri" || strings.HasSuffix(k, "_url"):
		p, q, _ := strings.Cut(s, "?")
		if q == "" {
			return Path(p)
		}
		return Path(p) + "?" + Query(q)
	case k == "query":
		return Query(s)
	}
	return Text(s)
}
