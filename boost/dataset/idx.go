package dataset

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"sort"
	"strconv"
)

// IDX magic numbers: unsigned bytes with 3 (images) or 1 (labels) dimensions.
const (
	idxImages = 0x00000803
	idxLabels = 0x00000801
	// pool is the public feature map: 4x4 mean pooling of 28x28 images.
	pool = 4
)

// LoadIDX reads an IDX image file and its label file (gzip or not) and
// applies the 4x4 mean-pooling feature map (28x28 -> 7x7 = 49 features,
// 2*mean/255 - 1). Labels are renumbered 0..K-1 in ascending order of the
// label values present; Classes are their decimal strings.
func LoadIDX(imagesPath, labelsPath string) (*Dataset, error) {
	img, err := readMaybeGzip(imagesPath)
	if err != nil {
		return nil, err
	}
	lab, err := readMaybeGzip(labelsPath)
	if err != nil {
		return nil, err
	}
	return ReadIDX(bytes.NewReader(img), bytes.NewReader(lab), imagesPath, labelsPath)
}

func idxHeader(r io.Reader, name string, magic uint32) ([]uint32, error) {
	var m uint32
	if err := binary.Read(r, binary.BigEndian, &m); err != nil {
		return nil, &ParseError{File: name, Err: fmt.Errorf("IDX header: %w", err)}
	}
	if m != magic {
		return nil, &ParseError{File: name, Err: fmt.Errorf("IDX magic %#08x, want %#08x", m, magic)}
	}
	dims := make([]uint32, magic&0xff)
	if err := binary.Read(r, binary.BigEndian, dims); err != nil {
		return nil, &ParseError{File: name, Offset: 4, Err: fmt.Errorf("IDX dimensions: %w", err)}
	}
	return dims, nil
}

// ReadIDX is LoadIDX on uncompressed readers.
func ReadIDX(images, labels io.Reader, imagesName, labelsName string) (*Dataset, error) {
	dims, err := idxHeader(images, imagesName, idxImages)
	if err != nil {
		return nil, err
	}
	n, rows, cols := int(dims[0]), int(dims[1]), int(dims[2])
	if rows == 0 || cols == 0 || rows%pool != 0 || cols%pool != 0 || rows > 4096 || cols > 4096 {
		return nil, &ParseError{File: imagesName, Offset: 8, Err: fmt.Errorf("images of %dx%d cannot be pooled %dx%d", rows, cols, pool, pool)}
	}
	ldims, err := idxHeader(labels, labelsName, idxLabels)
	if err != nil {
		return nil, err
	}
	if int(ldims[0]) != n {
		return nil, &ParseError{File: labelsName, Offset: 4, Err: fmt.Errorf("%d labels for %d images in %s", ldims[0], n, imagesName)}
	}
	const hdrImages, hdrLabels = 16, 8
	size := rows * cols
	// Read no more than the header promises, and check the file holds it.
	pix, err := io.ReadAll(io.LimitReader(images, int64(n)*int64(size)+1))
	if err != nil {
		return nil, &ParseError{File: imagesName, Offset: hdrImages, Err: err}
	}
	if len(pix) != n*size {
		return nil, &ParseError{File: imagesName, Offset: hdrImages + int64(min(len(pix), n*size)),
			Err: fmt.Errorf("header promises %d images of %d bytes (%d bytes), file has %d", n, size, n*size, len(pix))}
	}
	lab, err := io.ReadAll(io.LimitReader(labels, int64(n)+1))
	if err != nil {
		return nil, &ParseError{File: labelsName, Offset: hdrLabels, Err: err}
	}
	if len(lab) != n {
		return nil, &ParseError{File: labelsName, Offset: hdrLabels + int64(min(len(lab), n)),
			Err: fmt.Errorf("header promises %d labels, file has %d", n, len(lab))}
	}
	present := map[byte]bool{}
	for _, l := range lab {
		present[l] = true
	}
	var values []int
	for l := range present {
		values = append(values, int(l))
	}
	sort.Ints(values)
	index := map[byte]int{}
	d := &Dataset{Name: imagesName}
	for k, v := range values {
		index[byte(v)] = k
		d.Classes = append(d.Classes, strconv.Itoa(v))
	}
	pr, pc := rows/pool, cols/pool
	dim := pr * pc
	for i := 0; i < pr; i++ {
		for j := 0; j < pc; j++ {
			d.Features = append(d.Features, fmt.Sprintf("pool_%d_%d", i, j))
		}
	}
	d.X = make([][]float64, n)
	d.Y = make([]int, n)
	back := make([]float64, n*dim)
	for s := 0; s < n; s++ {
		img := pix[s*size : (s+1)*size]
		x := back[s*dim : (s+1)*dim : (s+1)*dim]
		for r := 0; r < rows; r++ {
			row := img[r*cols : (r+1)*cols]
			for c, p := range row {
				x[(r/pool)*pc+c/pool] += float64(p)
			}
		}
		for k := range x {
			x[k] = 2*x[k]/(pool*pool*255) - 1
		}
		d.X[s] = x
		d.Y[s] = index[lab[s]]
	}
	if len(d.Classes) < 2 {
		return nil, &ParseError{File: labelsName, Err: fmt.Errorf("only %d distinct labels", len(d.Classes))}
	}
	d.Schema = d.IdentitySchema()
	return d, nil
}
