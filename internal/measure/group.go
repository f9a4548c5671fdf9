package measure

// GroupRecords splits recs by key, keeping their order within a key:
// recs itself when every row has one key, else one slice of exactly the
// rows of each key, all carved from a single copy (a slice per key
// grown row by row copies every row several times over).
func GroupRecords[K comparable](recs []Record, key func(*Record) K) map[K][]Record {
	counts := map[K]int{}
	for i := range recs {
		counts[key(&recs[i])]++
	}
	if len(counts) == 1 {
		return map[K][]Record{key(&recs[0]): recs}
	}
	out := make(map[K][]Record, len(counts))
	all := make([]Record, len(recs))
	at := 0
	for k, n := range counts {
		out[k] = all[at : at : at+n]
		at += n
	}
	for i := range recs {
		k := key(&recs[i])
		out[k] = append(out[k], recs[i])
	}
	return out
}
