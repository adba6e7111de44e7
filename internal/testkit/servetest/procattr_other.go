//go:build !linux

package servetest

import "syscall"

func procAttr() *syscall.SysProcAttr { return nil }
