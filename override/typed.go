package override

import (
	"fmt"
	"math"
	"reflect"
	"sort"
	"strings"
	"unicode/utf8"
)

// Apply sets each of sets on dst (a pointer to a struct with toml tags), in order, by walking its dotted key
// through the struct: a key names a field by its toml tag (or, as TOML decoding allows, the tag in another case,
// or the field's name when it has no tag), an untagged embedded struct's fields are the struct's own, a map's
// key is the next part of the dotted key, and pointers are allocated on the way. The typed value is converted
// to the field's type as a TOML decoder would: an integer fits an integer or a float field, a float a float
// field, a table a struct or map, a list a slice. Nothing is printed and parsed back. A key dst has no field
// for is an error wrapping ErrUnknownKey and naming it; a value of the wrong type, or out of the field's range,
// is an error naming the key and what the field wants; so are a string that is not UTF-8 and a float that is not
// finite, which a config file could not hold. Sets before the failing one stay applied.
func Apply(sets []Set, dst any) error {
	rv := reflect.ValueOf(dst)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return fmt.Errorf("override: Apply needs a non-nil pointer, not %T", dst)
	}
	for _, s := range sets {
		if s.Key == "" {
			return fmt.Errorf("override: an empty key")
		}
		if err := setPath(rv.Elem(), strings.Split(s.Key, "."), s.Key, s.Value); err != nil {
			return err
		}
	}
	return nil
}

// setPath sets the value at the dotted path (the parts of key still to walk) below v.
func setPath(v reflect.Value, path []string, key string, value any) error {
	if len(path) == 0 {
		return setValue(v, key, value)
	}
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		return setPath(v.Elem(), path, key, value)
	case reflect.Struct:
		f, ok := field(v, path[0])
		if !ok {
			return fmt.Errorf("%w %s", ErrUnknownKey, key)
		}
		return setPath(f, path[1:], key, value)
	case reflect.Map:
		if v.Type().Key().Kind() != reflect.String {
			break
		}
		if v.IsNil() {
			v.Set(reflect.MakeMap(v.Type()))
		}
		k := reflect.ValueOf(path[0]).Convert(v.Type().Key())
		elem := reflect.New(v.Type().Elem()).Elem()
		if old := v.MapIndex(k); old.IsValid() {
			elem.Set(old)
		}
		if err := setPath(elem, path[1:], key, value); err != nil {
			return err
		}
		v.SetMapIndex(k, elem)
		return nil
	}
	return fmt.Errorf("%s: %s is %s, not a table", key, strings.TrimSuffix(key, "."+strings.Join(path, ".")), kindName(v.Type()))
}

// field finds the field of struct v that the TOML key name sets: the exact tag first, then the tag (or the
// untagged field's name) in another case, looking into untagged embedded structs.
func field(v reflect.Value, name string) (reflect.Value, bool) {
	var fold reflect.Value
	var walk func(v reflect.Value) (reflect.Value, bool)
	walk = func(v reflect.Value) (reflect.Value, bool) {
		t := v.Type()
		for i := range t.NumField() {
			sf := t.Field(i)
			tag, _, _ := strings.Cut(sf.Tag.Get("toml"), ",")
			if tag == "-" {
				continue
			}
			if sf.Anonymous && tag == "" && sf.Type.Kind() == reflect.Struct {
				if f, ok := walk(v.Field(i)); ok {
					return f, true
				}
				continue
			}
			if !sf.IsExported() {
				continue
			}
			if tag == "" {
				tag = sf.Name
			}
			if tag == name {
				return v.Field(i), true
			}
			if !fold.IsValid() && strings.EqualFold(tag, name) {
				fold = v.Field(i)
			}
		}
		return reflect.Value{}, false
	}
	if f, ok := walk(v); ok {
		return f, true
	}
	return fold, fold.IsValid()
}

// setValue converts value to v's type and sets it; key names the override in errors.
func setValue(v reflect.Value, key string, value any) error {
	wrong := func() error {
		text, err := Value(value)
		if err != nil {
			text = fmt.Sprint(value)
		}
		return fmt.Errorf("%s = %s: want %s", key, text, kindName(v.Type()))
	}
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		return setValue(v.Elem(), key, value)
	case reflect.Interface:
		if value == nil || !reflect.TypeOf(value).AssignableTo(v.Type()) {
			return wrong()
		}
		v.Set(reflect.ValueOf(value))
	case reflect.String:
		s, ok := value.(string)
		if !ok {
			return wrong()
		}
		if !utf8.ValidString(s) {
			return fmt.Errorf("%s = %q: not valid UTF-8, which a TOML string must be", key, s)
		}
		v.SetString(s)
	case reflect.Bool:
		b, ok := value.(bool)
		if !ok {
			return wrong()
		}
		v.SetBool(b)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, ok := integer(value)
		if !ok {
			return wrong()
		}
		if v.OverflowInt(n) {
			return fmt.Errorf("%s = %d: out of the range of %s", key, n, v.Type())
		}
		v.SetInt(n)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		n, ok := integer(value)
		if !ok {
			if u, isU := value.(uint64); isU && !v.OverflowUint(u) {
				v.SetUint(u)
				return nil
			}
			return wrong()
		}
		if n < 0 || v.OverflowUint(uint64(n)) {
			return fmt.Errorf("%s = %d: out of the range of %s", key, n, v.Type())
		}
		v.SetUint(uint64(n))
	case reflect.Float32, reflect.Float64:
		var f float64
		switch x := value.(type) {
		case float64:
			f = x
		case float32:
			f = float64(x)
		default:
			n, ok := integer(value)
			if !ok {
				return wrong()
			}
			f = float64(n)
		}
		if math.IsInf(f, 0) || math.IsNaN(f) {
			return fmt.Errorf("%s = %v: not finite", key, f)
		}
		if v.Kind() == reflect.Float32 && v.OverflowFloat(f) {
			return fmt.Errorf("%s = %g: out of the range of %s", key, f, v.Type())
		}
		v.SetFloat(f)
	case reflect.Slice:
		list := reflect.ValueOf(value)
		if value == nil || list.Kind() != reflect.Slice && list.Kind() != reflect.Array {
			return wrong()
		}
		out := reflect.MakeSlice(v.Type(), list.Len(), list.Len())
		for i := range list.Len() {
			if err := setValue(out.Index(i), fmt.Sprintf("%s[%d]", key, i), list.Index(i).Interface()); err != nil {
				return err
			}
		}
		v.Set(out)
	case reflect.Struct, reflect.Map:
		table, ok := value.(map[string]any)
		if !ok {
			return wrong()
		}
		if v.Kind() == reflect.Map && v.IsNil() {
			v.Set(reflect.MakeMap(v.Type()))
		}
		keys := make([]string, 0, len(table))
		for k := range table {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if err := setPath(v, []string{k}, key+"."+k, table[k]); err != nil {
				return err
			}
		}
	default:
		return wrong()
	}
	return nil
}

// integer is value as an int64 when it is an integer of a Go integer type (TOML decodes integers as int64).
func integer(value any) (int64, bool) {
	switch x := value.(type) {
	case int64:
		return x, true
	case int:
		return int64(x), true
	case int32:
		return int64(x), true
	case uint64:
		if x <= math.MaxInt64 {
			return int64(x), true
		}
	}
	return 0, false
}

// kindName says what a field of type t takes, in TOML's words.
func kindName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Struct, reflect.Map:
		return "a table"
	case reflect.Pointer:
		return kindName(t.Elem())
	}
	return "a " + t.String()
}

// Struct lists every key of src (a struct with toml tags, or a pointer to one) with its typed value, sorted by
// key: the sets that Apply turns back into src, and what decoding src's TOML form and flattening it (Flatten)
// gives, without printing it. Integers are int64 and floats float64, as TOML decodes them; lists are []any. Like
// the TOML encoder, it leaves out nil pointers and lists, fields tagged "-", and omitempty fields holding their
// zero value (or an empty list); a nil or empty map or struct adds no key.
func Struct(src any) []Set {
	var out []Set
	walkStruct(reflect.ValueOf(src), "", &out)
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// walkStruct appends the keys below v (a struct, map or pointer to one) under prefix to out.
func walkStruct(v reflect.Value, prefix string, out *[]Set) {
	join := func(k string) string {
		if prefix == "" {
			return k
		}
		return prefix + "." + k
	}
	for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		if v.IsNil() {
			return
		}
		v = v.Elem()
	}
	switch v.Kind() {
	case reflect.Struct:
		t := v.Type()
		for i := range t.NumField() {
			sf := t.Field(i)
			tag, opts, _ := strings.Cut(sf.Tag.Get("toml"), ",")
			if tag == "-" {
				continue
			}
			f := v.Field(i)
			if sf.Anonymous && tag == "" && sf.Type.Kind() == reflect.Struct {
				walkStruct(f, prefix, out)
				continue
			}
			if !sf.IsExported() {
				continue
			}
			if tag == "" {
				tag = sf.Name
			}
			omit := strings.Contains(opts, "omitempty") || strings.Contains(opts, "omitzero")
			switch {
			case omit && f.IsZero(),
				omit && f.Kind() == reflect.Slice && f.Len() == 0,
				f.Kind() == reflect.Slice && f.IsNil(): // the encoder writes no key for a nil list
				continue
			}
			walkValue(f, join(tag), out)
		}
	case reflect.Map:
		keys := v.MapKeys()
		for _, k := range keys {
			walkValue(v.MapIndex(k), join(fmt.Sprint(k.Interface())), out)
		}
	}
}

// walkValue appends the key of one value: a table's keys, or the value itself.
func walkValue(f reflect.Value, key string, out *[]Set) {
	for f.Kind() == reflect.Pointer || f.Kind() == reflect.Interface {
		if f.IsNil() {
			return
		}
		f = f.Elem()
	}
	switch f.Kind() {
	case reflect.Struct, reflect.Map:
		walkStruct(f, key, out)
		return
	}
	if v, ok := plain(f); ok {
		*out = append(*out, Set{Key: key, Value: v})
	}
}

// plain is a scalar or a list of scalars as TOML decodes it (int64, float64, string, bool, []any); a list of
// tables is not a value of any recipe and is left out.
func plain(f reflect.Value) (any, bool) {
	switch f.Kind() {
	case reflect.String:
		return f.String(), true
	case reflect.Bool:
		return f.Bool(), true
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return f.Int(), true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return int64(f.Uint()), true
	case reflect.Float32, reflect.Float64:
		return f.Float(), true
	case reflect.Slice, reflect.Array:
		list := make([]any, 0, f.Len())
		for i := range f.Len() {
			e := f.Index(i)
			for e.Kind() == reflect.Pointer || e.Kind() == reflect.Interface {
				if e.IsNil() {
					break
				}
				e = e.Elem()
			}
			v, ok := plain(e)
			if !ok {
				return nil, false
			}
			list = append(list, v)
		}
		return list, true
	}
	return nil, false
}
