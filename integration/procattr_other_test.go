//go:build !linux

package integration_test

import "syscall"

func procAttr() *syscall.SysProcAttr { return nil }
