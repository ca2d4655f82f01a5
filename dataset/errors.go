package dataset

import (
	"errors"
	"fmt"
	"io/fs"
)

// Sentinel errors, checked with errors.Is. Loader errors arrive wrapped in a
// *ParseError that names the file and the position.
var (
	// ErrInvalid marks a Dataset that breaks its invariants (Validate).
	ErrInvalid = errors.New("invalid dataset")
	// ErrSchema marks an invalid schema, or a header that does not fit it.
	ErrSchema = errors.New("invalid schema")
	// ErrEmpty marks input without a header or without data rows.
	ErrEmpty = errors.New("no data")
	// ErrFieldCount marks a CSV record whose field count differs from the header's.
	ErrFieldCount = errors.New("wrong number of fields")
	// ErrNotNumber marks a numeric field that does not parse as a float.
	ErrNotNumber = errors.New("not a number")
	// ErrNotFinite marks a numeric field that is NaN or infinite.
	ErrNotFinite = errors.New("not finite")
	// ErrMagnitude marks a numeric field larger in magnitude than MaxMagnitude.
	ErrMagnitude = errors.New("magnitude too large")
	// ErrMissing marks a missing value (see IsMissing) where the missing-value
	// policy is MissingError, or a column with nothing to fill it from.
	ErrMissing = errors.New("missing value")
	// ErrEmptyLabel marks a record whose label field is empty.
	ErrEmptyLabel = errors.New("empty label")
	// ErrUnknownLabel marks a label value that is not one of the schema's classes.
	ErrUnknownLabel = errors.New("unknown label")
	// ErrUnknownCategory marks a categorical value that the schema does not list.
	ErrUnknownCategory = errors.New("unknown category")
	// ErrCSV marks CSV syntax errors (bad quoting).
	ErrCSV = errors.New("bad CSV")
	// ErrGzip marks a file that should be, but is not, valid gzip data.
	ErrGzip = errors.New("bad gzip data")
	// ErrMagic marks an IDX file with the wrong magic number.
	ErrMagic = errors.New("wrong IDX magic number")
	// ErrIDXSize marks an IDX file whose dimensions are unusable or whose
	// length does not match the dimensions in its header.
	ErrIDXSize = errors.New("IDX size mismatch")
	// ErrCountMismatch marks image and label files with different counts.
	ErrCountMismatch = errors.New("image and label counts differ")
	// ErrConfig marks a bad argument: a synthetic configuration, partition
	// sizes, a --data spec.
	ErrConfig = errors.New("invalid configuration")
)

// ParseError reports bad input: the file (or the name given to a Read
// function), the position and the cause.
//
// Line > 0 is a 1-based line of a text file. Otherwise Offset >= 0 is a byte
// offset in a binary file (after decompression). Line == 0 and Offset < 0
// mean the error concerns the whole file (missing, unreadable, bad gzip).
type ParseError struct {
	File   string
	Line   int
	Offset int64
	Err    error
}

func (e *ParseError) Error() string {
	switch {
	case e.Line > 0:
		return fmt.Sprintf("%s:%d: %v", e.File, e.Line, e.Err)
	case e.Offset >= 0:
		return fmt.Sprintf("%s: offset %d: %v", e.File, e.Offset, e.Err)
	}
	return fmt.Sprintf("%s: %v", e.File, e.Err)
}

func (e *ParseError) Unwrap() error { return e.Err }

// fileError is a ParseError about a whole file.
func fileError(name string, err error) *ParseError {
	return &ParseError{File: name, Offset: -1, Err: err}
}

// lineError is a ParseError at a line of a text file.
func lineError(name string, line int, err error) *ParseError {
	return &ParseError{File: name, Line: line, Offset: -1, Err: err}
}

// offsetError is a ParseError at a byte offset of a binary file.
func offsetError(name string, off int64, err error) *ParseError {
	return &ParseError{File: name, Offset: off, Err: err}
}

// isNotExist reports whether err says a file does not exist.
func isNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }
