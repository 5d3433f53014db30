package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	sisimai "libsisimai.org/sisimai"
)

type row struct {
	File      string `json:"file"`
	Recipient string `json:"recipient"`
	Status    string `json:"status"`
	Code      string `json:"code"`
	Reason    string `json:"reason"`
	Hard      bool   `json:"hard"`
	Action    string `json:"action"`
}

func main() {
	files, _ := filepath.Glob(os.Args[1] + "/*.eml")
	sort.Strings(files)
	out := []row{}
	for _, f := range files {
		args := sisimai.Args()
		args.Delivered = true
		args.Vacation = true
		facts, _ := sisimai.Rise(f, args)
		if facts == nil { continue }
		for _, e := range *facts {
			out = append(out, row{filepath.Base(f), e.Recipient.Address, e.DeliveryStatus, e.ReplyCode, e.Reason, e.HardBounce, e.Action})
		}
	}
	b, _ := json.MarshalIndent(out, "", " ")
	fmt.Println(string(b))
}
