package auth

import "time"

var nowFunc = time.Now
