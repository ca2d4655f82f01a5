package dataset

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func idxBytes(magic uint32, dims []uint32, data []byte) []byte {
	b := binary.BigEndian.AppendUint32(nil, magic)
	for _, d := range dims {
		b = binary.BigEndian.AppendUint32(b, d)
	}
	return append(b, data...)
}

// idxImages returns n images of 28x28 where image s has every pixel equal to
// pixel(s, r, c).
func idxImages(n int, pixel func(s, r, c int) byte) []byte {
	data := make([]byte, 0, n*784)
	for s := range n {
		for r := range 28 {
			for c := range 28 {
				data = append(data, pixel(s, r, c))
			}
		}
	}
	return idxBytes(idxImagesMagic, []uint32{uint32(n), 28, 28}, data)
}

func idxLabels(labels ...byte) []byte {
	return idxBytes(idxLabelsMagic, []uint32{uint32(len(labels))}, labels)
}

func TestReadIDXPooling(t *testing.T) {
	// Image 0 is black, image 1 white, image 2 white in the top-left 4x4
	// block only, image 3 has one white pixel in block (6, 6).
	img := idxImages(4, func(s, r, c int) byte {
		switch {
		case s == 1, s == 2 && r < 4 && c < 4, s == 3 && r == 27 && c == 25:
			return 255
		}
		return 0
	})
	d, err := ReadIDX(bytes.NewReader(img), bytes.NewReader(idxLabels(7, 2, 7, 9)), "i", "l")
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Validate(); err != nil {
		t.Fatal(err)
	}
	if d.Len() != 4 || d.Dim() != 49 || d.Features[8] != "pool_1_1" {
		t.Fatalf("%d images of %d features (%q)", d.Len(), d.Dim(), d.Features[8])
	}
	if !slices.Equal(d.Classes, []string{"2", "7", "9"}) || !slices.Equal(d.Y, []int{1, 0, 1, 2}) {
		t.Fatalf("classes %q labels %v", d.Classes, d.Y)
	}
	for j := range 49 {
		want2 := -1.0
		if j == 0 {
			want2 = 1
		}
		want3 := -1.0
		if j == 48 {
			want3 = 255.0/16*2/255 - 1 // one white pixel of 16: mean 255/16
		}
		if d.X[0][j] != -1 || d.X[1][j] != 1 || d.X[2][j] != want2 || d.X[3][j] != want3 {
			t.Fatalf("feature %d: %v %v %v %v", j, d.X[0][j], d.X[1][j], d.X[2][j], d.X[3][j])
		}
	}
	if d.Schema == nil || d.Schema.Dim() != 49 {
		t.Fatal("no identity schema")
	}
}

func TestLoadIDXFiles(t *testing.T) {
	dir := t.TempDir()
	img := idxImages(3, func(s, r, c int) byte { return byte(s * 100) })
	lab := idxLabels(0, 6, 6)
	plain, err := LoadIDX(writeFile(t, dir, "img", img), writeFile(t, dir, "lab", lab))
	if err != nil {
		t.Fatal(err)
	}
	zipped, err := LoadIDX(writeFile(t, dir, "img.gz", gzipBytes(t, img)), writeFile(t, dir, "lab.gz", gzipBytes(t, lab)))
	if err != nil {
		t.Fatal(err)
	}
	if !sameData(plain, zipped) || plain.Len() != 3 {
		t.Fatal("gzip and plain files load differently")
	}
	if _, err := LoadIDX(filepath.Join(dir, "none"), filepath.Join(dir, "lab")); !isNotExist(err) {
		t.Fatalf("missing images: %v", err)
	}
	if _, err := LoadIDX(filepath.Join(dir, "img"), filepath.Join(dir, "none")); !isNotExist(err) {
		t.Fatalf("missing labels: %v", err)
	}
}

func TestIDXErrors(t *testing.T) {
	img := idxImages(2, func(s, r, c int) byte { return 1 })
	lab := idxLabels(0, 6)
	gz := gzipBytes(t, img)
	cases := []struct {
		name       string
		img, lab   []byte
		file       string
		off        int64
		is         error
		want       string
		imagesName string
	}{
		{name: "images magic", img: idxBytes(0x0903, []uint32{2, 28, 28}, nil), lab: lab, file: "img", off: 0, is: ErrMagic, want: "0x00000903"},
		{name: "labels magic", img: img, lab: idxBytes(0x0803, []uint32{2}, []byte{0, 6}), file: "lab", off: 0, is: ErrMagic},
		{name: "labels file of images", img: img, lab: img, file: "lab", off: 0, is: ErrMagic},
		{name: "empty images", img: nil, lab: lab, file: "img", off: 0, is: ErrIDXSize, want: "the magic number"},
		{name: "short header", img: []byte{0, 0, 8, 3, 0, 0}, lab: lab, file: "img", off: 6, is: ErrIDXSize, want: "dimension 0"},
		{name: "height", img: idxBytes(idxImagesMagic, []uint32{2, 27, 28}, make([]byte, 2*27*28)), lab: lab, file: "img", off: 8, is: ErrIDXSize, want: "image height 27"},
		{name: "width", img: idxBytes(idxImagesMagic, []uint32{2, 28, 0}, nil), lab: lab, file: "img", off: 12, is: ErrIDXSize, want: "image width 0"},
		{name: "huge side", img: idxBytes(idxImagesMagic, []uint32{2, 1 << 20, 28}, nil), lab: lab, file: "img", off: 8, is: ErrIDXSize},
		{name: "count mismatch", img: img, lab: idxLabels(0, 6, 0), file: "lab", off: 4, is: ErrCountMismatch, want: "3 labels, img has 2 images"},
		{name: "zero images", img: idxBytes(idxImagesMagic, []uint32{0, 28, 28}, nil), lab: idxLabels(), file: "img", off: 4, is: ErrEmpty},
		{name: "images truncated", img: img[:16+784+100], lab: lab, file: "img", off: 16 + 784 + 100, is: ErrIDXSize, want: "image 1 of 2"},
		{name: "images announced beyond the data", img: idxBytes(idxImagesMagic, []uint32{1 << 30, 28, 28}, make([]byte, 784)),
			lab: idxBytes(idxLabelsMagic, []uint32{1 << 30}, nil), file: "lab", off: 8, is: ErrIDXSize, want: "the data ends after 0"},
		{name: "images too long", img: append(slices.Clone(img), 0), lab: lab, file: "img", off: 16 + 2*784, is: ErrIDXSize, want: "data after the last image"},
		{name: "labels truncated", img: img, lab: idxBytes(idxLabelsMagic, []uint32{2}, []byte{0}), file: "lab", off: 9, is: ErrIDXSize},
		{name: "labels too long", img: img, lab: idxBytes(idxLabelsMagic, []uint32{2}, []byte{0, 6, 6}), file: "lab", off: 10, is: ErrIDXSize},
		{name: "one class", img: img, lab: idxLabels(3, 3), file: "lab", off: 8, is: ErrInvalid, want: "every label is 3"},
		{name: "bad gzip", img: gz[:len(gz)-20], lab: lab, file: "img", off: 16, is: ErrGzip},
		{name: "gzip name, plain data", img: img, lab: lab, file: "img.gz", off: 0, is: ErrGzip, imagesName: "img.gz"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			name := "img"
			if c.imagesName != "" {
				name = c.imagesName
			}
			_, err := ReadIDX(bytes.NewReader(c.img), bytes.NewReader(c.lab), name, "lab")
			var pe *ParseError
			if !errors.As(err, &pe) || !errors.Is(err, c.is) || pe.File != c.file || pe.Line != 0 || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want a *ParseError for %s wrapping %v containing %q", err, c.file, c.is, c.want)
			}
			if c.name != "bad gzip" && pe.Offset != c.off { // a gzip error surfaces wherever the inflater notices it
				t.Fatalf("offset %d, want %d (%v)", pe.Offset, c.off, err)
			}
			if !strings.Contains(err.Error(), "offset") {
				t.Fatalf("message %q does not give the offset", err)
			}
		})
	}
}

// errReader fails after its data.
type errReader struct {
	data []byte
	err  error
}

func (e *errReader) Read(p []byte) (int, error) {
	if len(e.data) == 0 {
		return 0, e.err
	}
	n := copy(p, e.data)
	e.data = e.data[n:]
	return n, nil
}

func TestIDXReadError(t *testing.T) {
	img := idxImages(2, func(s, r, c int) byte { return 1 })
	boom := errors.New("disk on fire")
	_, err := ReadIDX(&errReader{data: img[:100], err: boom}, bytes.NewReader(idxLabels(0, 6)), "img", "lab")
	if !errors.Is(err, boom) || errors.Is(err, ErrIDXSize) {
		t.Fatalf("err = %v, want the reader's error", err)
	}
	var _ io.Reader = &errReader{}
}
