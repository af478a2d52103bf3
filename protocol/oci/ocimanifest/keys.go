package ocimanifest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// A manifest must mean the same to the registry as to every client. The
// JSON decoder keeps the last of duplicate keys and binds field names
// case-insensitively ("Layers", even "ſize"), while other readers keep the
// first key or match case-sensitively: a document with {"layers":[A],
// "layers":[B]} would be checked and protected as B by the registry and
// pulled as A by a client. Such documents are refused.

// keyShape is the part of a manifest's structure the parser binds to
// fields: fields of an object (nil: a map or an ignored value) and the
// shape of array elements.
type keyShape struct {
	fields map[string]*keyShape
	elem   *keyShape
}

var descriptorShape = &keyShape{fields: map[string]*keyShape{
	"mediaType": nil, "digest": nil, "size": nil, "urls": nil,
	"annotations": nil, "data": nil, "artifactType": nil,
}}

var manifestShape = &keyShape{fields: map[string]*keyShape{
	"schemaVersion": nil, "mediaType": nil, "artifactType": nil, "annotations": nil,
	"config": descriptorShape, "subject": descriptorShape,
	"layers":    {elem: descriptorShape},
	"manifests": {elem: descriptorShape},
	"blobs":     {elem: descriptorShape},
}}

// checkManifestKeys refuses duplicate keys in any object of the manifest
// and keys that match a field the parser reads only case-insensitively.
// The payload must already be known to be valid JSON (which bounds its
// nesting depth, and so this recursion).
func checkManifestKeys(payload []byte) *Error {
	dec := json.NewDecoder(bytes.NewReader(payload))
	if err := checkKeys(dec, manifestShape); err != nil {
		return invalid("ambiguous manifest: %v", err)
	}
	return nil
}

func checkKeys(dec *json.Decoder, shape *keyShape) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch tok {
	case json.Delim('{'):
		return checkObjectKeys(dec, shape)
	case json.Delim('['):
		var elem *keyShape
		if shape != nil {
			elem = shape.elem
		}
		for dec.More() {
			if err := checkKeys(dec, elem); err != nil {
				return err
			}
		}
		_, err = dec.Token() // ']'
		return err
	}
	return nil
}

func checkObjectKeys(dec *json.Decoder, shape *keyShape) error {
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		key := tok.(string)
		field, sub := key, (*keyShape)(nil)
		if shape != nil {
			field, sub, err = shape.field(key)
			if err != nil {
				return err
			}
		}
		if seen[field] {
			return fmt.Errorf("duplicate key %q", key)
		}
		seen[field] = true
		if err := checkKeys(dec, sub); err != nil {
			return err
		}
	}
	_, err := dec.Token() // '}'
	return err
}

// field returns the field a key binds to (the key itself when it binds to
// none) and that field's shape.
func (s *keyShape) field(key string) (string, *keyShape, error) {
	if sub, ok := s.fields[key]; ok {
		return key, sub, nil
	}
	for name := range s.fields {
		if strings.EqualFold(name, key) {
			return "", nil, fmt.Errorf("key %q is not %q: field names are case-sensitive", key, name)
		}
	}
	return key, nil, nil
}
