package pfds

import (
	"errors"
	"reflect"
	"testing"

	"github.com/ppboost/ppboost/crypto/rng"
)

func TestTreeCodecRoundTrip(t *testing.T) {
	dom := mixedDomain()
	data := mixedData(200, t.Name())
	r := rng.ForName(t.Name())
	for i := 0; i < 20; i++ {
		p := DefaultParams()
		p.HMax = 1 + i%6
		tr := MakeTree(dom, data.X, data.Y, p, r).Public()
		b := AppendTree(nil, tr, dom)
		got, n, err := DecodeTree(b, dom, p.HMax)
		if err != nil || n != len(b) {
			t.Fatalf("decode: %v (%d of %d bytes)", err, n, len(b))
		}
		if !reflect.DeepEqual(got, tr) {
			t.Fatalf("round trip differs")
		}
		// Negative controls: too shallow a limit, truncation.
		if p.HMax > 1 {
			if _, _, err := DecodeTree(b, dom, p.HMax-1); !errors.Is(err, ErrCodec) {
				t.Errorf("depth limit not enforced: %v", err)
			}
		}
		if _, _, err := DecodeTree(b[:len(b)-1], dom, p.HMax); !errors.Is(err, ErrCodec) {
			t.Errorf("truncated tree accepted: %v", err)
		}
	}
}

func FuzzDecodeTree(f *testing.F) {
	dom := mixedDomain()
	data := mixedData(100, "fuzz")
	r := rng.Seeded(1)
	for h := 1; h <= 4; h++ {
		p := DefaultParams()
		p.HMax = h
		f.Add(AppendTree(nil, MakeTree(dom, data.X, data.Y, p, r), dom))
	}
	f.Add([]byte{})
	f.Add([]byte{1, 0, 5})
	f.Fuzz(func(t *testing.T, b []byte) {
		tr, n, err := DecodeTree(b, dom, 4)
		if err != nil {
			return
		}
		// A decoded tree re-encodes to bytes that decode to the same tree
		// (not necessarily the same bytes: varints may be overlong) and
		// predicts without panicking.
		again, m, err := DecodeTree(AppendTree(nil, tr, dom), dom, 4)
		if err != nil || m > n || !reflect.DeepEqual(again, tr) {
			t.Fatalf("re-encoding differs: %v", err)
		}
		tr.Predict(dom, data.X[0])
	})
}
