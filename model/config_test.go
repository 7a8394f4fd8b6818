package model

import (
	"strings"
	"testing"
)

// TestConfigKVHeadsAndQKVBias: kv_heads and qkv_bias are config keys like any other (Set parses them, Validate
// names them), and the parameter counts shrink k_proj and v_proj to KV·d_h rows and add the biases.
func TestConfigKVHeadsAndQKVBias(t *testing.T) {
	c := testConfig(NormRMS, GateNone, 1e-5, false) // V = 16, d = 8, d_ff = 16, L = 2
	for _, kv := range [][2]string{{"num_attention_heads", "4"}, {"head_dim", "4"}, {"kv_heads", "2"}, {"qkv_bias", "true"}} {
		if err := c.Set(kv[0], kv[1]); err != nil {
			t.Fatal(err)
		}
	}
	if c.KVHeads != 2 || !c.QKVBias || c.KVHeadCount() != 2 || c.KVDim() != 8 {
		t.Fatalf("after Set: %+v (KV %d, KV·d_h %d)", c, c.KVHeadCount(), c.KVDim())
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	// Per block: norms 2·8, q 16·8, k and v 8·8 each, biases 16 + 8 + 8, o 8·16, SwiGLU 3·16·8; plus the
	// embedding, the final norm and the head.
	if got, want := c.NumParams(), int64(16*8+2*(2*8+16*8+2*8*8+32+8*16+3*16*8)+8+16*8); got != want {
		t.Errorf("NumParams %d, want %d", got, want)
	}
	if got, want := c.MatmulParams(), int64(2*(16*8+2*8*8+8*16+3*16*8)+16*8); got != want {
		t.Errorf("MatmulParams %d, want %d (biases are not multiply-adds)", got, want)
	}
	if got, want := c.FLOPsPerToken(), float64(6*c.MatmulParams()+12*2*6*8); got != want {
		t.Errorf("FLOPsPerToken %g, want %g", got, want)
	}
	for _, tc := range []struct {
		key, value, want string
	}{
		{"kv_heads", "3", "kv_heads = 3: must divide num_attention_heads = 4"},
		{"kv_heads", "8", "kv_heads = 8: must divide"},
		{"kv_heads", "-1", "kv_heads = -1"},
		{"qkv_bias", "yes", "qkv_bias = \"yes\": want true or false"},
	} {
		bad := c
		err := bad.Set(tc.key, tc.value)
		if err == nil {
			err = bad.Validate()
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s = %s: error %v, want one containing %q", tc.key, tc.value, err, tc.want)
		}
	}
	for _, kv := range []int{0, 4} { // both spell multi-head attention
		mha := c
		mha.KVHeads = kv
		if mha.KVHeadCount() != 4 || mha.MatmulParams() != int64(2*(4*16*8+3*16*8)+16*8) {
			t.Errorf("kv_heads = %d: %d key/value heads, N_matmul %d", kv, mha.KVHeadCount(), mha.MatmulParams())
		}
	}
}
