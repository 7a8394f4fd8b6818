// Package finitejson writes and reads JSON in which a non-finite number (NaN, +Inf, −Inf) is null.
//
// encoding/json refuses to write NaN and ±Inf, yet the project's records hold them on purpose: one seed's
// standard error, a diverged run's loss, a metric a run did not record. Rather than one hand-written MarshalJSON
// per type with a mirror struct of *float64 fields, a type marshals itself through this package:
//
//	func (e Estimate) MarshalJSON() ([]byte, error) { return finitejson.Marshal(e) }
//
// and, to read null back as NaN, a pointer to a copy of the type without methods:
//
//	func (s *Score) UnmarshalJSON(b []byte) error { type plain Score; return finitejson.Unmarshal(b, (*plain)(s)) }
package finitejson

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strings"
	"unsafe"
)

// Marshal is json.Marshal with every non-finite float32 or float64 written as null, at any depth (struct fields,
// slice and array elements, map values, through pointers). Struct tags are read as encoding/json reads them
// (name, "-", omitempty; embedded structs are flattened and a shallower field hides a deeper one of the same
// name); the ",string" option is refused. A nested value whose type has its own MarshalJSON is written by it;
// v itself is walked field by field even if its type has one, so a MarshalJSON may call Marshal on its receiver.
func Marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	if err := encode(&buf, reflect.ValueOf(v), true); err != nil {
		return nil, fmt.Errorf("finitejson: %w", err)
	}
	return buf.Bytes(), nil
}

// Unmarshal is json.Unmarshal into the struct *p after setting its float64 and float32 fields (embedded ones
// included) to NaN, so that a null or absent number reads as NaN (unknown) rather than 0. p's type must not be
// one whose UnmarshalJSON calls Unmarshal on it (pass a pointer to a method-less copy of the type instead).
func Unmarshal(b []byte, p any) error {
	v := reflect.ValueOf(p)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return fmt.Errorf("finitejson: Unmarshal needs a pointer to a struct, not %T", p)
	}
	nanFields(v.Elem())
	return json.Unmarshal(b, p)
}

func nanFields(v reflect.Value) {
	for i := range v.NumField() {
		f, sf := v.Field(i), v.Type().Field(i)
		switch {
		case sf.Anonymous && f.Kind() == reflect.Struct:
			// encoding/json fills the promoted fields of an embedded struct even when its type is unexported.
			nanFields(reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem())
		case !sf.IsExported():
		case f.Kind() == reflect.Float64 || f.Kind() == reflect.Float32:
			f.SetFloat(math.NaN())
		}
	}
}

var marshalerType = reflect.TypeFor[json.Marshaler]()

func encode(buf *bytes.Buffer, v reflect.Value, top bool) error {
	if !v.IsValid() {
		buf.WriteString("null")
		return nil
	}
	if !top && v.Type().Implements(marshalerType) && v.CanInterface() {
		if (v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface) && v.IsNil() {
			buf.WriteString("null")
			return nil
		}
		return plain(buf, v.Interface())
	}
	switch v.Kind() {
	case reflect.Float64, reflect.Float32:
		x := v.Float()
		if math.IsNaN(x) || math.IsInf(x, 0) {
			buf.WriteString("null")
			return nil
		}
		if v.Kind() == reflect.Float32 {
			return plain(buf, float32(x))
		}
		return plain(buf, x)
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			buf.WriteString("null")
			return nil
		}
		return encode(buf, v.Elem(), false)
	case reflect.Struct:
		return encodeStruct(buf, v)
	case reflect.Slice, reflect.Array:
		if v.Kind() == reflect.Slice && v.IsNil() {
			buf.WriteString("null")
			return nil
		}
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return plain(buf, v.Interface()) // []byte: base64, as encoding/json writes it
		}
		buf.WriteByte('[')
		for i := range v.Len() {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := encode(buf, v.Index(i), false); err != nil {
				return err
			}
		}
		buf.WriteByte(']')
		return nil
	case reflect.Map:
		if v.IsNil() {
			buf.WriteString("null")
			return nil
		}
		// The values are written here; encoding/json writes the keys (their conversion and order).
		raw := reflect.MakeMapWithSize(reflect.MapOf(v.Type().Key(), reflect.TypeFor[json.RawMessage]()), v.Len())
		for it := v.MapRange(); it.Next(); {
			var vb bytes.Buffer
			if err := encode(&vb, it.Value(), false); err != nil {
				return err
			}
			raw.SetMapIndex(it.Key(), reflect.ValueOf(json.RawMessage(vb.Bytes())))
		}
		return plain(buf, raw.Interface())
	}
	if !v.CanInterface() {
		return fmt.Errorf("cannot write %s reached through an unexported field", v.Type())
	}
	return plain(buf, v.Interface())
}

func plain(buf *bytes.Buffer, x any) error {
	b, err := json.Marshal(x)
	if err != nil {
		return err
	}
	buf.Write(b)
	return nil
}

// field is one JSON member of a struct: its name, value, embedding depth and omitempty.
type field struct {
	name      string
	v         reflect.Value
	depth     int
	omitEmpty bool
}

func encodeStruct(buf *bytes.Buffer, v reflect.Value) error {
	var fs []field
	if err := fields(v, 0, &fs); err != nil {
		return err
	}
	// A shallower field hides a deeper one of the same name, as in encoding/json.
	shallowest := map[string]int{}
	for _, f := range fs {
		if d, ok := shallowest[f.name]; !ok || f.depth < d {
			shallowest[f.name] = f.depth
		}
	}
	buf.WriteByte('{')
	first := true
	for _, f := range fs {
		if f.depth != shallowest[f.name] || (f.omitEmpty && isEmpty(f.v)) {
			continue
		}
		if !first {
			buf.WriteByte(',')
		}
		first = false
		if err := plain(buf, f.name); err != nil {
			return err
		}
		buf.WriteByte(':')
		if err := encode(buf, f.v, false); err != nil {
			return fmt.Errorf("%s: %w", f.name, err)
		}
	}
	buf.WriteByte('}')
	return nil
}

func fields(v reflect.Value, depth int, out *[]field) error {
	t := v.Type()
	for i := range t.NumField() {
		sf, fv := t.Field(i), v.Field(i)
		tag := sf.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if sf.Anonymous && name == "" {
			ft := sf.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
				if fv.IsNil() {
					continue
				}
				fv = fv.Elem()
			}
			if ft.Kind() == reflect.Struct {
				if err := fields(fv, depth+1, out); err != nil {
					return err
				}
				continue
			}
		}
		if !sf.IsExported() {
			continue
		}
		if name == "" {
			name = sf.Name
		}
		var omit bool
		for o := range strings.SplitSeq(opts, ",") {
			switch o {
			case "omitempty":
				omit = true
			case "string":
				return fmt.Errorf("%s.%s: the \",string\" option is not supported", t, sf.Name)
			}
		}
		*out = append(*out, field{name: name, v: fv, depth: depth, omitEmpty: omit})
	}
	return nil
}

// isEmpty is encoding/json's omitempty test.
func isEmpty(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() == 0
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Interface, reflect.Pointer:
		return v.IsZero()
	}
	return false
}
