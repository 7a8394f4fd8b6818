package scale

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/smallinit/smallinit/arch"
	"github.com/smallinit/smallinit/safetensors"
)

// DefaultShardSize is the largest tensor payload of one shard unless told otherwise: 2 GB (decimal, as the
// Hugging Face "2GB" max_shard_size).
const DefaultShardSize = 2_000_000_000

// Shard is one file of a planned checkpoint.
type Shard struct {
	File    string            // file name: model.safetensors, or model-0000i-of-0000n.safetensors
	Tensors []arch.TensorSpec // in buffer order
	Bytes   int64             // tensor data bytes (the header not included)
}

// PlanShards splits specs, in order, into shards of at most maxBytes of tensor data each, as Hugging Face's
// split_torch_state_dict_into_shards does: a tensor that would overflow the current (non-empty) shard starts
// the next one, and a tensor larger than maxBytes gets a shard of its own. One shard is named
// model.safetensors; several are model-00001-of-0000n.safetensors and so on.
func PlanShards(specs []arch.TensorSpec, dtype safetensors.DType, maxBytes int64) []Shard {
	if maxBytes <= 0 {
		maxBytes = DefaultShardSize
	}
	es := int64(dtype.Size())
	var shards []Shard
	for _, t := range specs {
		n := int64(t.Size()) * es
		if len(shards) == 0 || (shards[len(shards)-1].Bytes+n > maxBytes && len(shards[len(shards)-1].Tensors) > 0) {
			shards = append(shards, Shard{})
		}
		s := &shards[len(shards)-1]
		s.Tensors = append(s.Tensors, t)
		s.Bytes += n
	}
	for i := range shards {
		if len(shards) == 1 {
			shards[i].File = safetensors.SingleFileName
		} else {
			shards[i].File = ShardName(i+1, len(shards))
		}
	}
	return shards
}

// ShardName is the Hugging Face name of shard i (1-based) of n: model-0000i-of-0000n.safetensors.
func ShardName(i, n int) string { return fmt.Sprintf("model-%05d-of-%05d.safetensors", i, n) }

var shardNameRE = regexp.MustCompile(`^model-\d{5}-of-\d{5}\.safetensors$`)

// isModelFile reports whether name is a file a checkpoint directory written by Init (or model.Save) holds.
func isModelFile(name string) bool {
	switch name {
	case arch.ConfigFile, safetensors.SingleFileName, safetensors.IndexFileName:
		return true
	}
	return shardNameRE.MatchString(name)
}

// header renders the start of a shard, the 8-byte length and the JSON header, with safetensors.EncodeHeader
// (the rendering safetensors.Writer uses): metadata {"format": "pt"}, then the tensors in order as dtype.
func header(s Shard, dtype safetensors.DType) ([]byte, error) {
	ts := make([]safetensors.HeaderTensor, len(s.Tensors))
	for i, t := range s.Tensors {
		ts[i] = safetensors.HeaderTensor{Name: t.Name, DType: dtype, Shape: t.Shape}
	}
	hdr, err := safetensors.EncodeHeader(map[string]string{"format": "pt"}, ts)
	if err != nil {
		return nil, fmt.Errorf("shard %s: %w", s.File, err)
	}
	return hdr, nil
}

// indexJSON renders model.safetensors.index.json: metadata.total_size (tensor data bytes over all shards) and
// the weight_map from tensor name to shard file, keys sorted, as transformers writes it.
func indexJSON(shards []Shard) ([]byte, error) {
	idx := struct {
		Metadata struct {
			TotalSize int64 `json:"total_size"`
		} `json:"metadata"`
		WeightMap map[string]string `json:"weight_map"`
	}{WeightMap: map[string]string{}}
	for _, s := range shards {
		idx.Metadata.TotalSize += s.Bytes
		for _, t := range s.Tensors {
			idx.WeightMap[t.Name] = s.File
		}
	}
	b, err := json.MarshalIndent(idx, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// ParseSize parses a byte count such as "2GB", "500MB", "1.5GiB", "64KiB" or "123456": B, KB, MB, GB and TB
// are decimal (as Hugging Face's max_shard_size), KiB, MiB, GiB and TiB binary; case and spaces are ignored.
func ParseSize(s string) (int64, error) {
	t := strings.ToUpper(strings.ReplaceAll(s, " ", ""))
	units := []struct {
		suffix string
		mult   float64
	}{
		{"KIB", 1 << 10}, {"MIB", 1 << 20}, {"GIB", 1 << 30}, {"TIB", 1 << 40},
		{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}, {"B", 1},
	}
	mult := 1.0
	for _, u := range units {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSuffix(t, u.suffix), u.mult
			break
		}
	}
	x, err := strconv.ParseFloat(t, 64)
	if err != nil || !(x > 0) || x*mult > 1<<62 {
		return 0, fmt.Errorf("size %q: want a positive byte count such as 2GB, 500MB or 1GiB", s)
	}
	return int64(x * mult), nil
}
