// Command shardhash-conformance runs the Go port against the conformance kit:
// it reads shardhash.conformance/1 cases (stdin, or the file named by the
// first argument) and writes one result line per case.
//
//	go run ./cmd/shardhash-conformance < ../../conformance/cases.jsonl
package main

import (
	"bufio"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"os"
	"strconv"

	"shardhash"
)

type rejected struct{}

func untag(t any) (any, error) {
	pair := t.([]any)
	kind := pair[0].(string)
	switch kind {
	case "int":
		b, _ := new(big.Int).SetString(pair[1].(string), 10)
		return b, nil
	case "str":
		return pair[1].(string), nil
	case "bytes":
		return hex.DecodeString(pair[1].(string))
	case "uuid":
		return shardhash.ParseUUID(pair[1].(string))
	case "tuple":
		var out shardhash.Tuple
		for _, x := range pair[1].([]any) {
			k, err := untag(x)
			if err != nil {
				return nil, err
			}
			out = append(out, k)
		}
		return out, nil
	case "bool":
		return pair[1].(bool), nil
	case "none":
		return nil, nil
	case "float":
		return rejected{}, nil
	}
	return nil, fmt.Errorf("unknown key tag %q", kind)
}

func u64(s any) uint64 {
	v, err := strconv.ParseUint(s.(string), 10, 64)
	if err != nil {
		panic(err)
	}
	return v
}

func hex64(h uint64) string { return fmt.Sprintf("%016x", h) }

func run(c map[string]any) (map[string]any, error) {
	switch c["op"] {
	case "hash":
		data, _ := hex.DecodeString(c["data"].(string))
		return map[string]any{"hash": hex64(shardhash.HashBytes(data, c["algorithm"].(string), u64(c["seed"])))}, nil
	case "encode":
		codec, err := shardhash.CodecFromDoc(c["codec"])
		if err != nil {
			return nil, err
		}
		key, err := untag(c["key"])
		if err != nil {
			return nil, err
		}
		b, err := codec.Encode(key)
		if err != nil {
			return nil, err
		}
		return map[string]any{"encoded": hex.EncodeToString(b)}, nil
	case "hash_key":
		h, err := shardhash.HasherFromDoc(c["hasher"])
		if err != nil {
			return nil, err
		}
		var out []string
		for _, t := range c["keys"].([]any) {
			key, err := untag(t)
			if err != nil {
				return nil, err
			}
			v, err := h.Hash(key)
			if err != nil {
				return nil, err
			}
			out = append(out, hex64(v))
		}
		return map[string]any{"hashes": out}, nil
	case "jump":
		n := c["n"].(*big.Int).Int64()
		out := []int{}
		for _, h := range c["hashes"].([]any) {
			out = append(out, shardhash.Jump(u64(h), int(n)))
		}
		return map[string]any{"buckets": out}, nil
	case "load":
		r, err := shardhash.FromDocument(c["document"])
		if err != nil {
			return nil, err
		}
		return map[string]any{"fingerprint": r.Fingerprint, "shards": r.Shards}, nil
	case "route":
		r, err := shardhash.FromDocument(c["document"])
		if err != nil {
			return nil, err
		}
		routes, ids, keyHashes := []any{}, []any{}, []any{}
		for _, t := range c["keys"].([]any) {
			key, err := untag(t)
			if err != nil {
				return nil, err
			}
			if _, bad := key.(rejected); bad {
				key = 1.5 // a float: refused by the codec
			}
			i, err := r.RouteIndex(key)
			if err != nil {
				var se *shardhash.Error
				if !errors.As(err, &se) {
					return nil, err
				}
				if se.Kind == "Unsupported" {
					return nil, err
				}
				routes, ids, keyHashes = append(routes, "!"+se.Kind), append(ids, nil), append(keyHashes, nil)
				continue
			}
			routes, ids = append(routes, i), append(ids, r.Shards[i])
			if r.RoutesOnHash() {
				h, _ := r.Hasher.Hash(key)
				keyHashes = append(keyHashes, hex64(h))
			} else {
				keyHashes = append(keyHashes, nil)
			}
		}
		hashRoutes := []int{}
		for _, h := range c["hashes"].([]any) {
			i, err := r.RouteHash(u64(h))
			if err != nil {
				return nil, err
			}
			hashRoutes = append(hashRoutes, i)
		}
		return map[string]any{"shards": r.Shards, "key_hashes": keyHashes, "routes": routes, "ids": ids,
			"hash_routes": hashRoutes}, nil
	case "replicas":
		r, err := shardhash.FromDocument(c["document"])
		if err != nil {
			return nil, err
		}
		var zones map[string]string
		if z, ok := c["zones"].(map[string]any); ok {
			zones = map[string]string{}
			for k, v := range z {
				zones[k] = v.(string)
			}
		}
		lists := [][]int{}
		for _, h := range c["hashes"].([]any) {
			l, err := r.ReplicasHash(u64(h), int(c["n"].(*big.Int).Int64()), zones)
			if err != nil {
				return nil, err
			}
			lists = append(lists, l)
		}
		return map[string]any{"lists": lists}, nil
	case "assign":
		r, err := shardhash.FromDocument(c["document"])
		if err != nil {
			return nil, err
		}
		var hs []uint64
		for _, h := range c["hashes"].([]any) {
			hs = append(hs, u64(h))
		}
		out, err := r.AssignHashes(hs)
		if err != nil {
			return nil, err
		}
		return map[string]any{"routes": out}, nil
	case "hot_read":
		r, err := shardhash.FromDocument(c["document"])
		if err != nil {
			return nil, err
		}
		reads := [][][2]int{}
		for _, t := range c["keys"].([]any) {
			key, err := untag(t)
			if err != nil {
				return nil, err
			}
			l, err := r.RouteRead(key)
			if err != nil {
				return nil, err
			}
			reads = append(reads, l)
		}
		return map[string]any{"reads": reads}, nil
	}
	return map[string]any{"unsupported": fmt.Sprintf("op %v", c["op"])}, nil
}

func main() {
	var in io.Reader = os.Stdin
	if len(os.Args) > 1 {
		f, err := os.Open(os.Args[1])
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		defer f.Close()
		in = f
	}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 {
			continue
		}
		v, err := shardhash.ParseJSON(line)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		c := v.(map[string]any)
		if _, ok := c["op"]; !ok {
			continue // the header
		}
		res, err := run(c)
		if err != nil {
			var se *shardhash.Error
			if !errors.As(err, &se) {
				fmt.Fprintf(os.Stderr, "%v: %v\n", c["id"], err)
				os.Exit(2)
			}
			if se.Kind == "Unsupported" {
				res = map[string]any{"unsupported": se.Msg}
			} else {
				res = map[string]any{"error": se.Kind}
			}
		}
		res["id"] = c["id"]
		b, _ := json.Marshal(res)
		out.Write(b)
		out.WriteByte('\n')
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
}
