(function(){"use strict";const c='<svg aria-hidden="true" width="28" height="28" viewBox="0 0 24 24" fill="none" stroke="currentColor" stroke-width="2" stroke-linecap="round" stroke-linejoin="round"><path d="M21 15a2 2 0 0 1-2 2H7l-4 4V5a2 2 0 0 1 2-2h14a2 2 0 0 1 2 2z"/></svg>',f='<svg aria-hidden="true" width="26" height="26" viewBox="0 0 24 24" fill="none" stroke="currentColor" stroke-width="2.2" stroke-linecap="round"><path d="M18 6 6 18M6 6l12 12"/></svg>';function p(a){const h=a.dataset.clientId;if(!h){console.warn("[parley] webchat.js: the data-client-id attribute is missing");return}const x=a.src.replace(/\/webchat\.js(\?.*)?$/,""),m=a.dataset.position==="left",w=a.dataset.color||"#4f46e5",u=a.dataset.label||"Chat with us",i=m?"left":"right",d=document.createElement("div");d.id="parley-webchat";const r=d.attachShadow({mode:"open"});r.innerHTML=`
    <style>
      :host { all: initial; }
      .fab { position: fixed; bottom: 20px; ${i}: 20px; z-index: 2147483000; width: 60px; height: 60px;
        border: 0; border-radius: 50%; background: ${w}; color: #fff; cursor: pointer; display: grid;
        place-items: center; box-shadow: 0 6px 20px rgba(0,0,0,.25); transition: transform .15s ease; }
      .fab:hover { transform: scale(1.05); }
      .fab:focus-visible { outline: 3px solid #111827; outline-offset: 3px; }
      .panel { position: fixed; bottom: 92px; ${i}: 20px; z-index: 2147483000;
        width: min(400px, calc(100vw - 40px)); height: min(640px, calc(100vh - 112px));
        border-radius: 14px; overflow: hidden; background: #fff; box-shadow: 0 12px 40px rgba(0,0,0,.25); }
      .panel[hidden] { display: none; }
      iframe { border: 0; width: 100%; height: 100%; display: block; }
      @media (max-width: 480px) {
        .panel { bottom: 88px; ${i}: 8px; width: calc(100vw - 16px); height: calc(100vh - 100px); border-radius: 12px; }
      }
      @media (prefers-reduced-motion: reduce) { .fab { transition: none; } }
    </style>
    <div class="panel" id="panel" role="dialog" aria-label="${u.replace(/"/g,"&quot;")}" hidden></div>
    <button class="fab" id="fab" type="button" aria-controls="panel" aria-expanded="false" aria-label="Open chat">${c}</button>`;const e=r.getElementById("fab"),n=r.getElementById("panel");let t=null;const l=()=>{t||(t=document.createElement("iframe"),t.title=u,t.allow="clipboard-write; microphone; autoplay",t.src=`${x}/w/${encodeURIComponent(h)}?embed=1`,n.appendChild(t)),n.hidden=!1,e.setAttribute("aria-expanded","true"),e.setAttribute("aria-label","Close chat"),e.innerHTML=f,t.focus()},s=()=>{n.hidden=!0,e.setAttribute("aria-expanded","false"),e.setAttribute("aria-label","Open chat"),e.innerHTML=c},b=()=>n.hidden?l():s();e.addEventListener("click",b),document.addEventListener("keydown",g=>{g.key==="Escape"&&!n.hidden&&(s(),e.focus())}),document.body.appendChild(d),window.parleyWebchat={open:l,close:s,toggle:b},a.dataset.open==="true"&&l()}const o=document.currentScript??Array.from(document.querySelectorAll("script[data-client-id]")).pop();o&&(document.body?p(o):document.addEventListener("DOMContentLoaded",()=>p(o)))})();
