package anchor_test

import (
	"fmt"

	"github.com/smallinit/smallinit/anchor"
)

// App. B.1's worked example, and what three answers to the held-out (4,3) with key 50 would mean.
func Example() {
	e, _ := anchor.ParseExample([]int32{23, 1, 2, 43, 46, 74, 54, 44, 72})
	fmt.Println("key", e.Key, "pair", e.Pair, "answer", e.Answer)
	for _, pred := range []int32{40, 44, 47} {
		fmt.Println(pred, anchor.Classify(50, pred))
	}
	// Output:
	// key 23 pair {1 2} answer 29
	// 40 inferential
	// 44 symmetric
	// 47 other
}
