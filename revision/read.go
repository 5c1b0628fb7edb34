package revision

import (
	"context"
	"fmt"
	"strconv"

	"github.com/strata-db/strata/revision/internal/codec"
)

// ReadOptions shapes a read for a reader with limited room, such as an agent's context window. The zero value reads
// everything.
type ReadOptions struct {
	// MaxDepth shows at most this many levels of containers, counting the value read as the first; deeper ones are
	// replaced by an elision marker. 0 means no limit.
	MaxDepth int
	// Offset and Limit select a window of the members (in key order) or elements of the value read. Limit 0 means
	// all.
	Offset, Limit uint64
	// MaxElements cuts nested arrays after this many elements, with a marker saying how many were left out. 0 means
	// no limit.
	MaxElements int
	// MaxBytes stops adding members or elements of the value read once the output reaches this size; Next then says
	// where to continue. A single member larger than this is itself elided. 0 means no limit.
	MaxBytes int
}

// ReadResult is the JSON text of a read, with what was left out.
type ReadResult struct {
	JSON      []byte
	Truncated bool   // something was elided or cut
	HasNext   bool   // the window stopped before the end of the value read
	Next      uint64 // the Offset to continue from when HasNext
	Count     uint64 // members or elements of the value read (0 for scalars)
}

// Elision markers are objects with one "$elided" member naming what was left out:
//
//	{"$elided":"object","path":"/a/b","count":12,"bytes":3456}     a container below MaxDepth (or over MaxBytes)
//	{"$elided":"elements","path":"/a","from":100,"count":900}      the tail of an array cut by MaxElements
const ElisionKey = "$elided"

// Read returns the value at ptr as JSON text shaped by opts.
func (f *Forest) Read(ctx context.Context, root Value, ptr Pointer, opts ReadOptions) (*ReadResult, error) {
	r := f.reader(ctx)
	v, err := r.get(root, ptr, "read")
	if err != nil {
		return nil, err
	}
	rd := &shapedReader{r: r, opts: opts, res: &ReadResult{}}
	k := v.Kind()
	if k != Object && k != Array {
		rd.res.JSON, err = f.AppendJSON(ctx, nil, v)
		return rd.res, err
	}
	rd.res.Count = v.Len()
	obj := k == Object
	buf := []byte{'['}
	if obj {
		buf[0] = '{'
	}
	i := opts.Offset
	wrote := 0
	err = r.each(v, opts.Offset, func(key, val string) error {
		if opts.Limit > 0 && uint64(wrote) >= opts.Limit {
			return rd.stopAt(i)
		}
		mark := len(buf)
		if wrote > 0 {
			buf = append(buf, ',')
		}
		if obj {
			buf = codec.AppendJSONString(buf, key)
			buf = append(buf, ':')
		}
		tok := key
		if !obj {
			tok = strconv.FormatUint(i, 10)
		}
		var err error
		start := len(buf)
		if buf, err = rd.value(buf, ptr.Child(tok), val, 1); err != nil {
			return err
		}
		if opts.MaxBytes > 0 && len(buf) > opts.MaxBytes {
			if wrote > 0 {
				buf = buf[:mark]
				return rd.stopAt(i)
			}
			buf = rd.marker(buf[:start], ptr.Child(tok), Value{val})
		}
		wrote++
		i++
		return nil
	})
	if err != nil {
		return nil, err
	}
	if obj {
		buf = append(buf, '}')
	} else {
		buf = append(buf, ']')
	}
	rd.res.JSON = buf
	return rd.res, nil
}

type shapedReader struct {
	r    *reader
	opts ReadOptions
	res  *ReadResult
}

func (rd *shapedReader) stopAt(i uint64) error {
	rd.res.HasNext, rd.res.Next, rd.res.Truncated = true, i, true
	return errStop
}

func (rd *shapedReader) marker(buf []byte, p Pointer, v Value) []byte {
	rd.res.Truncated = true
	return fmt.Appendf(buf, `{"%s":%q,"path":%s,"count":%d,"bytes":%d}`, ElisionKey, v.Kind().String(),
		codec.AppendJSONString(nil, p.String()), v.Len(), v.Size())
}

// value writes a value found depth levels below the value read.
func (rd *shapedReader) value(buf []byte, p Pointer, enc string, depth int) ([]byte, error) {
	v := Value{enc}
	k := v.Kind()
	if k != Object && k != Array {
		return rd.r.f.AppendJSON(rd.r.ctx, buf, v)
	}
	if rd.opts.MaxDepth > 0 && depth >= rd.opts.MaxDepth && v.Len() > 0 {
		return rd.marker(buf, p, v), nil
	}
	obj := k == Object
	if obj {
		buf = append(buf, '{')
	} else {
		buf = append(buf, '[')
	}
	var i uint64
	err := rd.r.each(v, 0, func(key, val string) error {
		if !obj && rd.opts.MaxElements > 0 && i >= uint64(rd.opts.MaxElements) {
			rd.res.Truncated = true
			buf = fmt.Appendf(buf, `,{"%s":"elements","path":%s,"from":%d,"count":%d}`, ElisionKey,
				codec.AppendJSONString(nil, p.String()), i, v.Len()-i)
			return errStop
		}
		if i > 0 {
			buf = append(buf, ',')
		}
		tok := key
		if obj {
			buf = codec.AppendJSONString(buf, key)
			buf = append(buf, ':')
		} else {
			tok = strconv.FormatUint(i, 10)
		}
		i++
		var err error
		buf, err = rd.value(buf, p.Child(tok), val, depth+1)
		return err
	})
	if err != nil {
		return nil, err
	}
	if obj {
		return append(buf, '}'), nil
	}
	return append(buf, ']'), nil
}
