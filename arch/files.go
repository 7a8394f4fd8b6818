package arch

// The files of a model directory (model/file.go writes and reads them): config.json, the config's Hugging Face
// Llama form, and model.safetensors, the weights. A reader below the model (a run directory's reader) names
// them to tell whether a directory holds a whole model.
const (
	ConfigFile  = "config.json"
	WeightsFile = "model.safetensors"
)
