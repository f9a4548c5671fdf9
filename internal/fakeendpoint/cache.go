package fakeendpoint

import (
	"container/list"
	"encoding/binary"
	"encoding/json"
	"hash/maphash"
	"strings"
	"sync"
	"time"
)

// prefixBlock is the prefix cache's block: the tokens hashed and cached
// together, vLLM's default block size.
const prefixBlock = 16

// The prefix cache models vLLM's automatic prefix caching (and the prompt
// caches of hosted APIs): a prompt is cut into blocks of prefixBlock
// tokens, block k's hash chains the hash of block k − 1 with its own
// tokens, and a request is served the longest run of leading blocks that
// are cached, whose prefill it then skips. The cache holds at most
// PrefixCacheTokens tokens of blocks and evicts the least recently used.
// A block becomes usable once the request that computed it has finished
// its prefill, at its first token: a request admitted while another still
// computes the same prefix computes it too. The last prompt token is never
// served from the cache, since the first output token needs its
// computation, as in vLLM. A served prefix shorter than
// PrefixCacheMinTokens counts for nothing, as providers cache only
// prompts of some length (OpenAI from 1,024 tokens).
//
// The tokens hashed are the simulator's approximation of the prompt
// (package doc): per chat message its messageOverhead tokens, standing
// for the role, then its text in 4-byte tokens; the reply's overhead
// comes last and is never cached. A request's cache_salt, as vLLM's,
// seeds the chain, so that requests with different salts share nothing.
type prefixCache struct {
	seed     maphash.Seed
	capacity int // blocks
	min      int // tokens
	mu       sync.Mutex
	blocks   map[uint64]*list.Element // of *cachedBlock, most recently used first
	lru      *list.List
}

// cachedBlock is one block in the cache: its chained hash and when it
// became usable.
type cachedBlock struct {
	hash  uint64
	ready time.Time
}

// newPrefixCache is a cache of capacityTokens (nil for none) that serves
// prefixes of minTokens or more.
func newPrefixCache(capacityTokens, minTokens int) *prefixCache {
	if capacityTokens <= 0 {
		return nil
	}
	return &prefixCache{seed: maphash.MakeSeed(), capacity: max(1, capacityTokens/prefixBlock), min: minTokens,
		blocks: map[uint64]*list.Element{}, lru: list.New()}
}

// hashes are the chained hashes of the prompt's full blocks that may be
// cached: those within its first promptTokens − 1 tokens.
func (c *prefixCache) hashes(p parsed) []uint64 {
	stream := promptStream(p)
	n := min(len(stream)/4, p.promptTokens-1) / prefixBlock
	out := make([]uint64, n)
	var prev [8]byte
	var h maphash.Hash
	h.SetSeed(c.seed)
	h.WriteString(p.req.CacheSalt)
	binary.LittleEndian.PutUint64(prev[:], h.Sum64())
	for k := range n {
		h.Reset()
		h.Write(prev[:])
		h.Write(stream[k*prefixBlock*4 : (k+1)*prefixBlock*4])
		out[k] = h.Sum64()
		binary.LittleEndian.PutUint64(prev[:], out[k])
	}
	return out
}

// admit looks up the prompt whose block hashes are given at now, and
// returns the tokens served from the cache (0 below the minimum); it then
// keeps every block of the prompt, those it computes usable from
// firstToken(cached), when its prefill ends.
func (c *prefixCache) admit(hashes []uint64, now time.Time, firstToken func(cached int) time.Time) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	hit := 0
	for _, h := range hashes {
		e, ok := c.blocks[h]
		if !ok || e.Value.(*cachedBlock).ready.After(now) {
			break
		}
		hit++
	}
	cached := hit * prefixBlock
	if cached < c.min {
		cached = 0
	}
	ready := firstToken(cached)
	for _, h := range hashes {
		if e, ok := c.blocks[h]; ok {
			c.lru.MoveToFront(e)
			continue
		}
		c.blocks[h] = c.lru.PushFront(&cachedBlock{hash: h, ready: ready})
		for c.lru.Len() > c.capacity {
			old := c.lru.Back()
			delete(c.blocks, old.Value.(*cachedBlock).hash)
			c.lru.Remove(old)
		}
	}
	return cached
}

// promptStream is the prompt as the cache sees it, 4 bytes a token: a
// chat request's messages, each its role in messageOverhead tokens and
// its text padded to whole tokens, or a completions request's text (or
// token ids, 4 bytes each).
func promptStream(p parsed) []byte {
	var b []byte
	pad := func() {
		for len(b)%4 != 0 {
			b = append(b, 0)
		}
	}
	if p.req.Messages == nil {
		raw := p.req.Prompt
		var list []json.RawMessage
		if json.Unmarshal(raw, &list) == nil && len(list) == 1 {
			raw = list[0]
		}
		var text string
		var ids []int
		switch {
		case json.Unmarshal(raw, &text) == nil:
			b = append(b, text...)
			pad()
		case json.Unmarshal(raw, &ids) == nil:
			for _, id := range ids {
				b = binary.LittleEndian.AppendUint32(b, uint32(id))
			}
		}
		return b
	}
	for _, m := range p.req.Messages {
		role := make([]byte, 4*messageOverhead)
		copy(role, m.Role)
		b = append(b, role...)
		b = append(b, messageText(m.Content)...)
		pad()
	}
	return b
}

// messageText is the text of a message content: a string, or its text
// parts joined (parseRequest has checked that it decodes).
func messageText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []contentPart
	_ = json.Unmarshal(raw, &parts)
	var b strings.Builder
	for _, p := range parts {
		if p.Type == "text" {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}
