package dataset

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strconv"
)

const (
	// IDX magic numbers: unsigned bytes in 3 (images) or 1 (labels) dimensions.
	idxImagesMagic = 0x00000803
	idxLabelsMagic = 0x00000801
	// Pool is the side of the public feature map's mean-pooling block:
	// 28x28 images give 7x7 = 49 features.
	Pool = 4
	// MaxIDXSide caps an image's height and width (MNIST's are 28).
	MaxIDXSide = 1024
	// pixelScale maps a block's pixel sum to [-1, 1]: 2*mean/255 - 1 =
	// sum/(Pool*Pool*255/2) - 1, exact at both ends.
	pixelScale = Pool * Pool * 255 / 2
)

// LoadIDX reads an IDX image file and its label file (MNIST format, each
// gzip-compressed or not) and applies the public feature map: mean pooling
// over Pool x Pool blocks (28x28 -> 7x7 = 49 features), each 2*mean/255 - 1.
// Labels are remapped to 0..K-1 in ascending order of the distinct label
// values present; Classes are their decimal strings (e.g. "0", "6"), so a
// file missing some label values gets other indices than one that has them.
// Errors are *ParseError naming the file and the byte offset (in the
// decompressed data).
func LoadIDX(imagesPath, labelsPath string) (*Dataset, error) {
	fi, ri, err := openMaybeGzip(imagesPath)
	if err != nil {
		return nil, err
	}
	defer fi.Close()
	fl, rl, err := openMaybeGzip(labelsPath)
	if err != nil {
		return nil, err
	}
	defer fl.Close()
	return readIDX(ri, rl, imagesPath, labelsPath)
}

// ReadIDX is LoadIDX on readers; the names are used in errors (a name ending
// in .gz, or data starting with the gzip magic, is decompressed).
func ReadIDX(images, labels io.Reader, imagesName, labelsName string) (*Dataset, error) {
	ri, err := maybeGunzip(bufio.NewReader(images), imagesName)
	if err != nil {
		return nil, err
	}
	rl, err := maybeGunzip(bufio.NewReader(labels), labelsName)
	if err != nil {
		return nil, err
	}
	return readIDX(ri, rl, imagesName, labelsName)
}

// idxHeader reads the magic number and the dimensions.
func idxHeader(r io.Reader, name string, magic uint32) ([]uint32, error) {
	var hdr [4]byte
	if n, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, offsetError(name, int64(n), idxReadError(err, "the magic number"))
	}
	if m := binary.BigEndian.Uint32(hdr[:]); m != magic {
		return nil, offsetError(name, 0, fmt.Errorf("%w: %#08x, want %#08x", ErrMagic, m, magic))
	}
	dims := make([]uint32, magic&0xff)
	for i := range dims {
		if n, err := io.ReadFull(r, hdr[:]); err != nil {
			return nil, offsetError(name, int64(4+4*i+n), idxReadError(err, "dimension "+strconv.Itoa(i)))
		}
		dims[i] = binary.BigEndian.Uint32(hdr[:])
	}
	return dims, nil
}

// idxReadError explains a failed read of `what`: the data ended early, or the
// reader failed (bad gzip data, I/O).
func idxReadError(err error, what string) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("%w: the data ends before %s", ErrIDXSize, what)
	}
	return fmt.Errorf("reading %s: %w", what, err)
}

// expectEOF checks that r has no data left (reading to the end also makes a
// gzip reader verify its checksum).
func expectEOF(r io.Reader, name string, off int64, what string) error {
	var b [1]byte
	n, err := io.ReadFull(r, b[:])
	if n > 0 {
		return offsetError(name, off, fmt.Errorf("%w: data after %s", ErrIDXSize, what))
	}
	if err != nil && err != io.EOF {
		return offsetError(name, off, err)
	}
	return nil
}

func readIDX(images, labels io.Reader, imagesName, labelsName string) (*Dataset, error) {
	const imagesData, labelsData = 16, 8 // header sizes
	dims, err := idxHeader(images, imagesName, idxImagesMagic)
	if err != nil {
		return nil, err
	}
	n, rows, cols := int(dims[0]), int(dims[1]), int(dims[2])
	for _, side := range []struct {
		v   int
		off int64
		of  string
	}{{rows, 8, "height"}, {cols, 12, "width"}} {
		if side.v == 0 || side.v%Pool != 0 || side.v > MaxIDXSide {
			return nil, offsetError(imagesName, side.off, fmt.Errorf("%w: image %s %d, want a positive multiple of %d up to %d",
				ErrIDXSize, side.of, side.v, Pool, MaxIDXSide))
		}
	}
	ldims, err := idxHeader(labels, labelsName, idxLabelsMagic)
	if err != nil {
		return nil, err
	}
	if int(ldims[0]) != n {
		return nil, offsetError(labelsName, 4, fmt.Errorf("%w: %d labels, %s has %d images", ErrCountMismatch, ldims[0], imagesName, n))
	}
	if n == 0 {
		return nil, offsetError(imagesName, 4, fmt.Errorf("%w: the header announces 0 images", ErrEmpty))
	}

	// Labels first: they are small. Read no more than the header promises,
	// without trusting it for the allocation.
	lab, err := io.ReadAll(io.LimitReader(labels, int64(n)))
	if err != nil {
		return nil, offsetError(labelsName, labelsData+int64(len(lab)), idxReadError(err, "the labels"))
	}
	if len(lab) < n {
		return nil, offsetError(labelsName, labelsData+int64(len(lab)),
			fmt.Errorf("%w: the header announces %d labels, the data ends after %d", ErrIDXSize, n, len(lab)))
	}
	if err := expectEOF(labels, labelsName, labelsData+int64(n), "the last label"); err != nil {
		return nil, err
	}
	var present [256]bool
	for _, l := range lab {
		present[l] = true
	}
	var index [256]int
	d := &Dataset{Name: imagesName}
	for v, ok := range present {
		if ok {
			index[v] = len(d.Classes)
			d.Classes = append(d.Classes, strconv.Itoa(v))
		}
	}
	if len(d.Classes) < 2 {
		return nil, offsetError(labelsName, labelsData, fmt.Errorf("%w: every label is %s, need at least 2 classes", ErrInvalid, d.Classes[0]))
	}

	pr, pc := rows/Pool, cols/Pool
	dim := pr * pc
	for i := range pr {
		for j := range pc {
			d.Features = append(d.Features, fmt.Sprintf("pool_%d_%d", i, j))
		}
	}
	size := int64(rows) * int64(cols)
	row := make([]byte, cols)
	arena := rowArena{dim: dim} // rows allocated as images arrive: the header may lie about n
	for s := range n {
		x := arena.next()
		d.X = append(d.X, x)
		for r := range rows {
			if k, err := io.ReadFull(images, row); err != nil {
				off := imagesData + int64(s)*size + int64(r*cols+k)
				return nil, offsetError(imagesName, off, fmt.Errorf("image %d of %d (%dx%d): %w", s, n, rows, cols,
					idxReadError(err, "the end of the image")))
			}
			xr := x[(r/Pool)*pc : (r/Pool+1)*pc]
			for c, p := range row {
				xr[c/Pool] += float64(p)
			}
		}
		for k, v := range x {
			x[k] = v/pixelScale - 1
		}
	}
	if err := expectEOF(images, imagesName, imagesData+int64(n)*size, "the last image"); err != nil {
		return nil, err
	}
	d.Y = make([]int, n)
	for s, l := range lab {
		d.Y[s] = index[l]
	}
	d.Schema = d.IdentitySchema()
	return d, nil
}
