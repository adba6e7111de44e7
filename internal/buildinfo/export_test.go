package buildinfo

// FromBuild exposes fromBuild to the package's external tests.
var FromBuild = fromBuild
