package dataset

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
)

// ParseError names the file and the line (text) or byte offset (binary)
// where bad input was found.
type ParseError struct {
	File   string
	Line   int   // 1-based line for text files, 0 if unknown
	Offset int64 // byte offset for binary files, -1 if unknown
	Err    error
}

func (e *ParseError) Error() string {
	switch {
	case e.Line > 0:
		return fmt.Sprintf("%s:%d: %v", e.File, e.Line, e.Err)
	case e.Offset > 0:
		return fmt.Sprintf("%s: offset %d: %v", e.File, e.Offset, e.Err)
	}
	return fmt.Sprintf("%s: %v", e.File, e.Err)
}

func (e *ParseError) Unwrap() error { return e.Err }

func isNotExist(err error) bool {
	var pe *ParseError
	if errors.As(err, &pe) {
		return errors.Is(pe.Err, fs.ErrNotExist)
	}
	return errors.Is(err, fs.ErrNotExist)
}

func sibling(path, name string) string { return filepath.Join(filepath.Dir(path), name) }
