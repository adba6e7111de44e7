package core

// The names of layouts, types and methods as text, so that encoders and
// decoders (configuration files, JSON, flags) read and write them by the
// same names as ParseLayout, ParseType and ParseMethod, and refuse what
// those refuse. ID and MachineID stay numbers: their text is their decimal.

// MarshalText is the layout's name: "sorted", "vesta" or "leaf".
func (l Layout) MarshalText() ([]byte, error) { return []byte(l.String()), nil }

// UnmarshalText parses a name as ParseLayout does.
func (l *Layout) UnmarshalText(b []byte) error { return layoutNames.unmarshal(l, b) }

// MarshalText is the type's name: "max-peak" or "min-granularity".
func (t Type) MarshalText() ([]byte, error) { return []byte(t.String()), nil }

// UnmarshalText parses a name or number as ParseType does.
func (t *Type) UnmarshalText(b []byte) error { return typeNames.unmarshal(t, b) }

// MarshalText is the method's name: "embedded", "central", "rest" or
// "reserved".
func (m Method) MarshalText() ([]byte, error) { return []byte(m.String()), nil }

// UnmarshalText parses a name or number as ParseMethod does.
func (m *Method) UnmarshalText(b []byte) error { return methodNames.unmarshal(m, b) }
