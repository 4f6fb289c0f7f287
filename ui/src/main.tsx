import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { App, takeLoginToken } from './App';
import './styles.css';

// The one-time login token leaves the address bar before anything else happens.
const loginToken = takeLoginToken();

const container = document.getElementById('root');
if (!container) throw new Error('index.html has no #root');
createRoot(container).render(
  <StrictMode>
    <App loginToken={loginToken} />
  </StrictMode>,
);
