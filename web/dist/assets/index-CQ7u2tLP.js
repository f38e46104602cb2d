import{b as r}from"./client-CZlph0SO.js";var a=r();export{a as r};
