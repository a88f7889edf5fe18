package country

import "testing"

func TestValid(t *testing.T) {
	for code, want := range map[string]bool{
		"GB": true, "US": true, "DE": true, "AQ": true, "XK": true, "SS": true, "BQ": true,
		"UK": false, "XX": false, "ZZ": false, "EU": false, "AC": false, "SU": false, "YU": false, "AN": false,
		"gb": false, "G": false, "GBR": false, "": false, "QO": false, "001": false,
	} {
		if got := Valid(code); got != want {
			t.Errorf("Valid(%q) = %v, want %v", code, got, want)
		}
	}
	if n := len(All()); n < 245 || n > 255 {
		t.Errorf("%d countries, want ISO 3166-1's 249 give or take", n)
	}
	if Name("GB") != "United Kingdom" || Name("UK") != "" {
		t.Errorf("Name(GB) = %q, Name(UK) = %q", Name("GB"), Name("UK"))
	}
}

func TestSuggest(t *testing.T) {
	for in, want := range map[string]string{"UK": "GB", "uk": "GB", "gb": "GB", "TP": "TL", "XX": "", "ZZ": "", "Germany": "", "": ""} {
		if got := Suggest(in); got != want {
			t.Errorf("Suggest(%q) = %q, want %q", in, got, want)
		}
	}
}
