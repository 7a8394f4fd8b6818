package tokenizer

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"
)

// DefaultVocabSize is the vocabulary size smallinit trains by default: 256 byte tokens, 3839 merges and
// <|endoftext|>. Small enough that the embedding and output layers do not dominate small models.
const DefaultVocabSize = 4096

// Train learns a byte-level BPE tokenizer with vocabSize ids (the 256 byte tokens and <|endoftext|> included,
// so vocabSize-257 merges) from texts, using smallinit's pre-tokenizer. Each text is pre-tokenised on its own,
// and occurrences of "<|endoftext|>" in a text are cut out first, so texts may be single documents or documents
// already joined with the separator. If the texts run out of pairs to merge first, the tokenizer is smaller than
// vocabSize; VocabSize reports the real size. The package doc describes the algorithm and its tie-breaking.
func Train(texts []string, vocabSize int) (*Tokenizer, error) {
	if vocabSize < 257 {
		return nil, fmt.Errorf("tokenizer: vocabulary size %d: need at least 257 (256 bytes and %s)", vocabSize, EndOfText)
	}
	if vocabSize > maxVocabTokens {
		return nil, fmt.Errorf("tokenizer: vocabulary size %d: at most %d", vocabSize, maxVocabTokens)
	}
	// Unique pre-tokens and their counts.
	counts := make(map[string]int64)
	sp := smallinitSplitter
	for _, text := range texts {
		for text != "" {
			seg, rest, _ := strings.Cut(text, EndOfText)
			for i := 0; i < len(seg); {
				j := sp.next(seg, i)
				if j-i > 1 { // single bytes have no pairs
					counts[seg[i:j]]++
				}
				i = j
			}
			text = rest
		}
	}
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)

	tr := &trainer{
		pairCount: make(map[uint64]int64),
		pairWords: make(map[uint64][]int32),
		words:     make([]trainWord, len(keys)),
		stamp:     make([]int32, len(keys)),
	}
	for b := 0; b < 256; b++ {
		tr.addToken(string([]byte{byte(b)}))
	}
	for wi, k := range keys {
		syms := make([]int32, len(k))
		for i := range len(k) {
			syms[i] = int32(k[i])
		}
		c := counts[k]
		tr.words[wi] = trainWord{syms: syms, count: c}
		tr.stamp[wi] = -1
		for i := 0; i+1 < len(syms); i++ {
			tr.inc(syms[i], syms[i+1], c, int32(wi), false)
		}
	}
	for key, c := range tr.pairCount {
		tr.heap.push(heapEntry{count: c, a: int32(key >> 32), b: int32(uint32(key))})
	}
	tr.heap.init()

	var merges [][2]int32
	for len(tr.tokens) < vocabSize-1 && len(tr.heap) > 0 {
		e := tr.heap.pop()
		key := pairKey(e.a, e.b)
		if cur := tr.pairCount[key]; cur != e.count {
			if cur > 0 { // the count fell since the entry was pushed: queue it again at its true count
				tr.heap.push(heapEntry{count: cur, a: e.a, b: e.b})
				tr.heap.up(len(tr.heap) - 1)
			}
			continue
		}
		merges = append(merges, [2]int32{e.a, e.b})
		tr.merge(e.a, e.b, int32(len(merges)-1))
	}

	vocab := tr.tokens
	inModel := make([]bool, len(vocab)+1)
	for i := range vocab {
		inModel[i] = true
	}
	eot := int32(len(vocab))
	vocab = append(vocab, EndOfText)
	added := []addedToken{{ID: eot, Content: EndOfText, Special: true}}
	t, err := newTokenizer(vocab, inModel, merges, added, smallinitSplitter)
	if err != nil {
		return nil, errors.New("tokenizer: training built an inconsistent tokenizer: " + err.Error()) // a bug
	}
	return t, nil
}

// trainer holds the state of BPE training: the unique pre-tokens as symbol sequences, the count of every
// adjacent pair (weighted by word counts), the words each pair occurs in, and a heap of pair counts.
type trainer struct {
	tokens    []string // id -> bytes
	whole     []bool   // id -> the token is whole UTF-8 characters
	cont      []bool   // id -> the token starts with a UTF-8 continuation byte
	words     []trainWord
	stamp     []int32 // word -> the last merge that rewrote it
	pairCount map[uint64]int64
	pairWords map[uint64][]int32 // pair -> words that held it when it was counted (may hold stale entries)
	heap      pairHeap
	newPairs  []uint64 // pairs that involve the token being created
}

type trainWord struct {
	syms  []int32
	count int64
}

func (tr *trainer) addToken(s string) int32 {
	tr.tokens = append(tr.tokens, s)
	tr.whole = append(tr.whole, utf8.ValidString(s))
	tr.cont = append(tr.cont, s[0]&0xC0 == 0x80)
	return int32(len(tr.tokens) - 1)
}

// mergeable reports whether tokens a and b may be merged: either b continues a character that a starts (b
// begins with a continuation byte), or both are whole characters. So no token ever holds the end of one
// character and the start of another.
func (tr *trainer) mergeable(a, b int32) bool {
	return tr.cont[b] || (tr.whole[a] && tr.whole[b])
}

// inc adds c to the count of pair (a, b) found in word wi. With isNew, (a, b) involves the token being created:
// its word list is extended and the pair is remembered so that it can be queued once the merge is done.
func (tr *trainer) inc(a, b int32, c int64, wi int32, isNew bool) {
	if !tr.mergeable(a, b) {
		return
	}
	key := pairKey(a, b)
	old := tr.pairCount[key]
	tr.pairCount[key] = old + c
	if ws := tr.pairWords[key]; len(ws) == 0 || ws[len(ws)-1] != wi {
		tr.pairWords[key] = append(ws, wi)
	}
	if isNew && old == 0 {
		tr.newPairs = append(tr.newPairs, key)
	}
}

func (tr *trainer) dec(a, b int32, c int64) {
	if tr.mergeable(a, b) {
		tr.pairCount[pairKey(a, b)] -= c
	}
}

// merge creates the token a+b and rewrites every word that holds the pair, updating the counts of the pairs
// around each occurrence, then queues the pairs the new token forms.
func (tr *trainer) merge(a, b, m int32) {
	nt := tr.addToken(tr.tokens[a] + tr.tokens[b])
	key := pairKey(a, b)
	list := tr.pairWords[key]
	delete(tr.pairWords, key)
	tr.newPairs = tr.newPairs[:0]
	for _, wi := range list {
		if tr.stamp[wi] == m {
			continue
		}
		tr.stamp[wi] = m
		w := &tr.words[wi]
		syms, c := w.syms, w.count
		out := syms[:0] // rewritten in place: out never overtakes the read position
		for i := 0; i < len(syms); {
			if i+1 < len(syms) && syms[i] == a && syms[i+1] == b {
				if len(out) > 0 {
					p := out[len(out)-1]
					tr.dec(p, a, c)
					tr.inc(p, nt, c, wi, true)
				}
				if i+2 < len(syms) {
					n := syms[i+2]
					tr.dec(b, n, c)
					tr.inc(nt, n, c, wi, true)
				}
				out = append(out, nt)
				i += 2
			} else {
				out = append(out, syms[i])
				i++
			}
		}
		w.syms = out
	}
	delete(tr.pairCount, key)
	for _, k := range tr.newPairs {
		if c := tr.pairCount[k]; c > 0 {
			tr.heap.push(heapEntry{count: c, a: int32(k >> 32), b: int32(uint32(k))})
			tr.heap.up(len(tr.heap) - 1)
		}
	}
}

// heapEntry is a pair and its count when queued; the heap orders by count, highest first, then by the pair's
// ids, smallest first (the documented tie-break).
type heapEntry struct {
	count int64
	a, b  int32
}

func (x heapEntry) before(y heapEntry) bool {
	if x.count != y.count {
		return x.count > y.count
	}
	if x.a != y.a {
		return x.a < y.a
	}
	return x.b < y.b
}

// pairHeap is a binary heap of heapEntry; push appends without ordering (call up or init afterwards).
type pairHeap []heapEntry

func (h *pairHeap) push(e heapEntry) { *h = append(*h, e) }

func (h pairHeap) init() {
	for i := len(h)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

func (h pairHeap) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !h[i].before(h[p]) {
			break
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
}

func (h pairHeap) down(i int) {
	for {
		l, m := 2*i+1, i
		if l < len(h) && h[l].before(h[m]) {
			m = l
		}
		if l+1 < len(h) && h[l+1].before(h[m]) {
			m = l + 1
		}
		if m == i {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

func (h *pairHeap) pop() heapEntry {
	s := *h
	top := s[0]
	s[0] = s[len(s)-1]
	s = s[:len(s)-1]
	s.down(0)
	*h = s
	return top
}
