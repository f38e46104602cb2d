//go:build !linux

package main

func stopWithGoRun() {}
