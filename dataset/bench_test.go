package dataset

import (
	"path/filepath"
	"testing"
)

// BenchmarkSynthetic generates DefaultSynthetic with 1,000,000 rows x 20 features.
func BenchmarkSynthetic(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Synthetic(DefaultSynthetic(1_000_000, 1)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLoadCSVAdult loads data/adult.csv.gz (32,561 rows, gzip) with AdultSchema.
func BenchmarkLoadCSVAdult(b *testing.B) {
	b.ReportAllocs()
	s := AdultSchema()
	for b.Loop() {
		if _, err := LoadCSV(filepath.Join("data", adultFile), CSVOptions{Schema: s}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLoadIDXFashion loads the Fashion T-shirt/Shirt training split (12,000 images, gzip).
func BenchmarkLoadIDXFashion(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := LoadIDX(filepath.Join("data", fashionTrainImage), filepath.Join("data", fashionTrainLabel)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPartition cuts 1,000,000 rows into 10,000 owner shards.
func BenchmarkPartition(b *testing.B) {
	d, err := Synthetic(DefaultSynthetic(1_000_000, 1))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := d.Partition(10_000, nil, 1); err != nil {
			b.Fatal(err)
		}
	}
}
