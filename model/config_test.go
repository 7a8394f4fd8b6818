package model

import (
	"strings"
	"testing"

	"github.com/smallinit/smallinit/arch"
)

// TestConfigKVHeadsAndQKVBias: kv_heads and qkv_bias are config keys like any other (Set parses them, Validate
// names them), and the parameter counts shrink k_proj and v_proj to KV·d_h rows and add the biases.
func TestConfigKVHeadsAndQKVBias(t *testing.T) {
	c := testConfig(arch.NormRMS, arch.GateNone, 1e-5, false) // V = 16, d = 8, d_ff = 16, L = 2
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

// TestNonEmbeddingParamsMatchesHandCount pins N (docs/definitions.md §4, the x-axis of L(N)) against parameter counts written
// out by hand from the tensor shapes: the embedding and an untied head are left out, everything else (norm
// gains, attention, the gate, the FFN; for MoE the router, every routed expert, the shared expert and its gate)
// is in.
func TestNonEmbeddingParamsMatchesHandCount(t *testing.T) {
	tied := testConfig(arch.NormRMS, arch.GateNone, 1e-5, true)
	for _, tc := range []struct {
		name      string
		cfg       arch.Config
		n, vocabs int64 // N by hand, and how many V·d matrices NumParams has besides
	}{
		// V = 16, d = 8, d_ff = 16, L = 2, H = 2 (d_h = 4). Per block: norms 2·8, q, k, v, o 8·8 each,
		// headwise g_proj [H, d] = 2·8, SwiGLU 3·16·8; then the final norm 8.
		{"dense_headwise_untied", testConfig(arch.NormRMS, arch.GateHeadwise, 1e-5, false), 2*(2*8+4*8*8+2*8+3*16*8) + 8, 2},
		{"dense_tied", tied, 2*(2*8+4*8*8+3*16*8) + 8, 1},
		// E = 4 experts of width 6, top-2, a shared expert of width 6, elementwise gate [H·d_h, d] = 8·8, MoE in
		// every block. Per block: norms 2·8, q, k, v, o 8·8 each, g_proj 8·8, router [E, d] = 4·8, experts
		// 4·3·6·8, shared expert 3·6·8 and its gate [1, d] = 8 (all experts: total, not active, parameters).
		{"moe_e4_shared", moeConfig(4, 2, true, 6, 0, 1), 2*(2*8+4*8*8+8*8+4*8+4*3*6*8+3*6*8+8) + 8, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.cfg.Validate(); err != nil {
				t.Fatal(err)
			}
			if got := tc.cfg.NonEmbeddingParams(); got != tc.n {
				t.Errorf("NonEmbeddingParams %d, want %d by hand", got, tc.n)
			}
			if got, want := tc.cfg.NumParams()-tc.cfg.NonEmbeddingParams(), tc.vocabs*16*8; got != want {
				t.Errorf("NumParams − N = %d, want %d (the embedding and an untied head)", got, want)
			}
		})
	}
}
