// Package npmpublish reads the body of an npm publish: it splits the
// tarball out of the JSON document as the body streams in, decodes and
// inspects the tarball, and checks the document against it. It knows
// nothing of HTTP or of the store (a refusal is an *Error the protocol
// answers), so that fuzzing it compiles the standard library and the
// npm naming and version rules alone.
package npmpublish

import "fmt"

// Error is a publish the registry refuses: npm answers 400 with the
// message, or 413 when TooLarge.
type Error struct {
	Message  string
	TooLarge bool
}

func (e *Error) Error() string { return e.Message }

// refuse is a 400.
func refuse(format string, args ...any) *Error {
	return &Error{Message: fmt.Sprintf(format, args...)}
}

// tooLarge is a 413.
func tooLarge(format string, args ...any) *Error {
	return &Error{Message: fmt.Sprintf(format, args...), TooLarge: true}
}

// malformed is the refusal of a body that is not JSON.
func malformed(msg string) *Error {
	return refuse("malformed JSON body: %s", msg)
}
