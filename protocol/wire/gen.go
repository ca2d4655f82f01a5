package wire

// Regenerate with protoc (Debian protobuf-compiler 3.21) and
// protoc-gen-go v1.36.11: go install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.11
//go:generate protoc --go_out=. --go_opt=paths=source_relative ppboost.proto
