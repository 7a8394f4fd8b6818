// Package safetensors reads and writes the Hugging Face safetensors format:
// an 8-byte little-endian header length N, N bytes of JSON header describing
// each tensor's dtype, shape and byte range, then the raw little-endian tensor
// bytes.
//
// The reader is built for files from anywhere: Open validates the whole
// header (sizes, dtypes, shapes, offsets tiling the buffer exactly, no
// duplicate keys) before any tensor data is touched, allocates nothing larger
// than the file justifies, and reports every problem as an error naming the
// file. Tensor data is then read lazily, one tensor at a time, with ReadAt, so
// multi-gigabyte F16/BF16 checkpoints can be converted to float32 piecemeal.
//
// The writer (Create) produces files atomically via a temporary file and a
// rename, and Sharded/OpenModel read the multi-file layout described by
// model.safetensors.index.json.
package safetensors
