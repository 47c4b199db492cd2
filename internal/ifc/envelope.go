package ifc

import "github.com/loom-gateway/gateway/internal/jsjson"

// cutToBudget returns the longest document-order prefix of env that fits in
// budget UTF-16 units, with the objects and arrays it leaves open closed,
// and whether anything was dropped. env must be compact JSON as the
// jsjson.Writer writes it. A member is kept whole or not at all for a scalar; an
// object or array member that does not fit whole is opened and cut the same
// way inside, and nothing after the first cut is kept, at any depth. So
// what remains is well formed, within budget, and never reordered; a value
// of env that fits is returned as it is.
func cutToBudget(env []byte, budget int) ([]byte, bool) {
	if jsjson.UTF16LenBytes(env) <= budget {
		return env, false
	}
	out := make([]byte, 0, min(len(env), budget*3))
	var closers []byte // of the containers open in out, innermost last
	used := 0          // units of out plus its closers
	first := true      // the next value is the first of its container
	i := 0
	for i < len(env) {
		c := env[i]
		switch c {
		case '}', ']':
			out = append(out, c)
			closers = closers[:len(closers)-1]
			first = false
			i++
			continue
		case ',':
			i++
			continue
		}
		// One value at i, with its member name when its container is an
		// object: the name, ':' and the value's first token, or the
		// whole scalar.
		start := i
		if len(closers) > 0 && closers[len(closers)-1] == '}' {
			i = skipString(env, i) + 2 // past the name and its colon
		}
		open := env[i] == '{' || env[i] == '['
		var end int
		if open {
			end = i + 1
		} else {
			end = skipScalar(env, i)
		}
		need := jsjson.UTF16LenBytes(env[start:end])
		if !first {
			need++
		}
		if open {
			need++ // its closer
		}
		if used+need > budget {
			if len(out) == 0 {
				return []byte("{}"), true
			}
			for k := len(closers) - 1; k >= 0; k-- {
				out = append(out, closers[k])
			}
			return out, true
		}
		if !first {
			out = append(out, ',')
		}
		out = append(out, env[start:end]...)
		used += need
		i = end
		first = open
		if open {
			if env[end-1] == '{' {
				closers = append(closers, '}')
			} else {
				closers = append(closers, ']')
			}
		}
	}
	return out, false
}

// skipString returns the index of the closing quote of the string that
// starts at env[i].
func skipString(env []byte, i int) int {
	for i++; i < len(env); i++ {
		switch env[i] {
		case '\\':
			i++
		case '"':
			return i
		}
	}
	return len(env) - 1
}

// skipScalar returns the index just past the string, number or literal at
// env[i].
func skipScalar(env []byte, i int) int {
	if env[i] == '"' {
		return skipString(env, i) + 1
	}
	for i < len(env) {
		switch env[i] {
		case ',', '}', ']':
			return i
		}
		i++
	}
	return i
}
