//go:build chaos

package soak

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
)

// Profile is one configuration of a campaign: a soak whose runs do not all run the
// same chaos command. Args are chaos flags added to each of its runs (after the soak's
// own and ChaosArgs).
type Profile struct {
	Name string   `json:"name"`
	Args []string `json:"args"`
}

// ProfileOf returns the profile of run index of a soak of runs runs over profiles: the
// runs are cut into len(profiles) contiguous blocks, so that the shards of a soak (which
// take every N-th index) each run every profile, and the assignment does not depend on
// the sharding. No profiles: the zero Profile.
func ProfileOf(profiles []Profile, runs, index int) Profile {
	if len(profiles) == 0 || runs <= 0 {
		return Profile{}
	}
	return profiles[min(index*len(profiles)/runs, len(profiles)-1)]
}

var profileNameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9.-]{0,62}$`)

// The soak's own flags of each run: a profile that set them would run another soak.
var soakOwnFlags = []string{"duration", "seed", "out", "quiet", "replay"}

// ParseProfiles reads a campaign's profiles: one per line, "NAME: FLAGS", FLAGS split
// as a shell splits words (single and double quotes, no expansion); blank lines and
// lines starting with # are skipped. Names are unique, lower case; a profile must not
// set the soak's own flags (--duration, --seed, --out, --quiet, --replay).
func ParseProfiles(r io.Reader) ([]Profile, error) {
	var out []Profile
	sc := bufio.NewScanner(r)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		name, rest, ok := strings.Cut(text, ":")
		name = strings.TrimSpace(name)
		if !ok || !profileNameRE.MatchString(name) {
			return nil, fmt.Errorf("line %d: want NAME: FLAGS with a lower-case NAME, got %q", line, text)
		}
		if slices.ContainsFunc(out, func(p Profile) bool { return p.Name == name }) {
			return nil, fmt.Errorf("line %d: profile %q twice", line, name)
		}
		args, err := splitWords(rest)
		if err != nil {
			return nil, fmt.Errorf("line %d (%s): %w", line, name, err)
		}
		for _, a := range args {
			flag, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
			if strings.HasPrefix(a, "-") && slices.Contains(soakOwnFlags, flag) {
				return nil, fmt.Errorf("line %d (%s): --%s is the soak's own flag", line, name, flag)
			}
		}
		out = append(out, Profile{Name: name, Args: args})
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, errors.New("no profile")
	}
	return out, nil
}

// LoadProfiles reads the profiles file path (see ParseProfiles).
func LoadProfiles(path string) ([]Profile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	ps, err := ParseProfiles(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return ps, nil
}

// splitWords splits s into words as a POSIX shell would without expansions: blanks
// separate words, single quotes keep everything literally, double quotes keep blanks
// and take \" and \\ as escapes.
func splitWords(s string) ([]string, error) {
	var words []string
	var w strings.Builder
	in, quote := false, rune(0)
	rs := []rune(s)
	for i := 0; i < len(rs); i++ {
		c := rs[i]
		switch {
		case quote == '\'':
			if c == '\'' {
				quote = 0
			} else {
				w.WriteRune(c)
			}
		case quote == '"':
			switch {
			case c == '"':
				quote = 0
			case c == '\\' && i+1 < len(rs) && (rs[i+1] == '"' || rs[i+1] == '\\'):
				i++
				w.WriteRune(rs[i])
			default:
				w.WriteRune(c)
			}
		case c == '\'' || c == '"':
			quote, in = c, true
		case c == ' ' || c == '\t':
			if in {
				words = append(words, w.String())
				w.Reset()
				in = false
			}
		default:
			w.WriteRune(c)
			in = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("unterminated %c quote", quote)
	}
	if in {
		words = append(words, w.String())
	}
	return words, nil
}
