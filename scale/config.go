package scale

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/smallinit/smallinit/arch"
	"github.com/smallinit/smallinit/gammainit"
	"github.com/smallinit/smallinit/internal/atomicfile"
	"github.com/smallinit/smallinit/model"
	"github.com/smallinit/smallinit/safetensors"
)

// TorchDtype is the config.json torch_dtype of a stored dtype: float32, bfloat16 or float16.
func TorchDtype(d safetensors.DType) (string, error) {
	switch d {
	case safetensors.F32:
		return "float32", nil
	case safetensors.BF16:
		return "bfloat16", nil
	case safetensors.F16:
		return "float16", nil
	}
	return "", fmt.Errorf("dtype %q: want F32, BF16 or F16", d)
}

// configJSON renders config.json exactly as model.Save does, with torch_dtype set to torchDtype and init, if
// non-nil, recorded as smallinit_init.
func configJSON(c arch.Config, init *gammainit.Record, torchDtype string) ([]byte, error) {
	if init == nil {
		return model.ConfigJSON(c, nil, torchDtype) // no smallinit_init (a nil *Record in an any would be null)
	}
	return model.ConfigJSON(c, init, torchDtype)
}

// WriteConfig writes dir/config.json for c atomically, in model.Save's format (a Hugging Face Llama, Qwen3 or
// Qwen2-MoE config plus smallinit's fields), with torch_dtype naming the stored dtype and init, if non-nil,
// recorded as smallinit_init.
func WriteConfig(dir string, c arch.Config, init *gammainit.Record, dtype safetensors.DType) error {
	td, err := TorchDtype(dtype)
	if err != nil {
		return err
	}
	b, err := configJSON(c, init, td)
	if err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(dir, arch.ConfigFile), b)
}

// writeFileSync writes data to path (a new file) and syncs it; the caller renames the directory into place.
func writeFileSync(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
