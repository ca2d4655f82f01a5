package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
)

// Owner configuration files (`ppboost owner --config FILE`): a JSON object
// whose keys are the owner's flag names (with - or _), e.g.
//
//	{"data": "owner-000.csv", "key": "owner.key", "state": "state/",
//	 "user": "12D3KooW...", "bootstrap": "/ip4/10.0.0.1/tcp/4001/p2p/12D3KooW...",
//	 "eps": 5, "budget": 20, "colluders": "all", "stay": true}
//
// The precedence is the user's (`ppboost user --config`): a flag given on
// the command line wins over the file, the file wins over the defaults.
// Values are JSON strings, numbers or booleans, checked by the flag they
// set, and relative paths are relative to the working directory, as on
// the command line. A key that is not a flag is an error naming the file
// and the key.

// configFlag is the flag that names a command's configuration file.
const configFlag = "config"

// applyConfigFile sets every flag of fs that the JSON object in path names
// and that was not given on the command line.
func applyConfigFile(fs *flag.FlagSet, path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return usagef("--config: %v", err)
	}
	var obj map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&obj); err != nil {
		return usagef("--config %s: not a JSON object: %v", path, err)
	}
	if dec.More() {
		return usagef("--config %s: more than one JSON value", path)
	}
	set := setFlags(fs)
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	seen := map[string]string{}
	for _, k := range keys {
		name := strings.ReplaceAll(k, "_", "-")
		f := fs.Lookup(name)
		if f == nil || name == configFlag {
			return usagef("--config %s: %q is not a flag of this command (see -h)", path, k)
		}
		if prev, dup := seen[name]; dup {
			return usagef("--config %s: %q and %q set the same flag", path, prev, k)
		}
		seen[name] = k
		v, err := configValue(obj[k])
		if err != nil {
			return usagef("--config %s: %q: %v", path, k, err)
		}
		if set[name] {
			continue // the command line wins
		}
		if err := fs.Set(name, v); err != nil {
			return usagef("--config %s: %q: %v", path, k, err)
		}
	}
	return nil
}

// configValue turns a JSON scalar into the flag text that sets it.
func configValue(raw json.RawMessage) (string, error) {
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return "", err
	}
	switch x := v.(type) {
	case string:
		return x, nil
	case json.Number:
		return x.String(), nil
	case bool:
		return strconv.FormatBool(x), nil
	case nil:
		return "", errors.New("null: leave the key out to keep the default")
	}
	return "", fmt.Errorf("want a string, number or boolean, got %s", raw)
}
